"""What a framework's model registry tells the solver (a pack's ``[entry]`` registry-dict keys):
the classes its dict literals name (``{"Arch": ("module", "Class")}``, read as text by
``tracer.index.registry``, the scan's reader), which the program builds from a string at run
time, so no call of the tree shows it:

* the runner's receiver of the protocol's setter that no class of the tree reaches is one of
  them (as ``entry_seeds`` says for a module variable of entry classes);
* a call of one of the registry's factories builds the class its name keyword names
  (``init_vllm_registered_model(..., architectures=["Qwen2ForCausalLM"])``) or its class
  keyword passes (``initialize_model(..., model_class=Llama4ForCausalLM)``).

The scan's resolver reads the same keys (analysis/entries.py): both engines bind alike."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tracer.index.registry import read_registry
from tracer.model.protocol import Protocol


@dataclass(frozen=True)
class RegistryRule:
    setter: str  # the protocol's method: a receiver of it no class reaches is a registered class
    classes: tuple[tuple[str, str, str], ...]  # (architecture, absolute module, class name)
    factories: tuple[str, ...] = ()  # functions building the class a keyword names
    name_keyword: str = ""  # the keyword giving architecture names (a list of strings)
    class_keywords: tuple[str, ...] = ()  # keywords passing the class itself

    def key(self) -> str:
        """The rule's part of a cached answer's key."""
        text = repr((self.setter, self.classes, self.factories, self.name_keyword, self.class_keywords))
        return "registry:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def registry_rule(root: str | Path, registry_module: str, variables: Iterable[str], package: str, setter: str,
                  factories: Iterable[str] = (), name_keyword: str = "",
                  class_keywords: Iterable[str] = ()) -> RegistryRule | None:
    """The rule of a registry module of the tree at ``root`` (a package folder, or a folder holding
    one); None when the tree has no such module."""
    text = _module_text(Path(root), registry_module)
    if text is None:
        return None
    rows = read_registry(text, tuple(variables), package)
    return RegistryRule(setter, tuple((r.architecture, r.module, r.class_name) for r in rows), tuple(factories),
                        name_keyword, tuple(class_keywords))


def _module_text(root: Path, module: str) -> str | None:
    parts = module.split(".")
    # the tree holds the package (root/vllm/.../registry.py) or is it (root/.../registry.py)
    for rest in [parts] + ([parts[1:]] if root.name == parts[0] and len(parts) > 1 else []):
        for path in (root.joinpath(*rest).with_suffix(".py"), root.joinpath(*rest, "__init__.py")):
            if path.is_file():
                return path.read_text(encoding="utf-8", errors="replace")
    return None


def registry_rules(root: str | Path, packs: Iterable[Protocol]) -> tuple[RegistryRule, ...]:
    """The rules of the packs whose entry classes a registry dict literal names."""
    rules = []
    for p in packs:
        if p.entry_kind == "registry-dict" and p.registry_module and p.registry_variables:
            rule = registry_rule(root, p.registry_module, p.registry_variables, p.registry_package, p.setter,
                                 p.registry_factories, p.registry_factory_keyword, p.registry_factory_class_keywords)
            if rule is not None:
                rules.append(rule)
    return tuple(rules)
