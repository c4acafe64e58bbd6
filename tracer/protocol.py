"""Protocol packs: declarative TOML descriptions of a capture protocol (rules/)."""

from __future__ import annotations

import fnmatch
import functools
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ProtocolError(Exception):
    pass


@dataclass(frozen=True)
class Protocol:
    name: str
    framework: str
    description: str
    setter: str
    state_attribute: str
    output_flag: str
    ids_parameter: str
    id_shift: int
    package: str
    markers: tuple[str, ...]
    entry_variable: str
    entry_modules: tuple[str, ...]
    draft_patterns: tuple[str, ...]  # entry classes that are draft heads (fnmatch on class or module name)
    runner_modules: tuple[str, ...]
    runner_roots: tuple[str, ...]
    graph_capture_calls: tuple[str, ...]
    graph_capture_classes: tuple[str, ...]
    state_markers: tuple[str, ...]  # per-layer attributes a forward may read instead of the list
    fallback_description: str
    draft_ids_keys: tuple[str, ...]
    draft_count_keys: tuple[str, ...]
    target_text_config_keys: tuple[str, ...]
    source: str  # file the pack came from
    # Entry classes: "module-variable" (a module-level variable in every entry module)
    # or "registry-dict" (a dict literal {architecture: ("module", "Class")} in one module).
    entry_kind: str = "module-variable"
    registry_module: str = ""
    registry_variables: tuple[str, ...] = ()
    registry_package: str = ""  # package the registry's module names are relative to
    # Functions that build a registry class from an architecture name passed as this keyword.
    registry_factories: tuple[str, ...] = ()
    registry_factory_keyword: str = "architectures"
    registry_factory_class_keywords: tuple[str, ...] = ()  # `model_class=Cls` passes the class itself
    # Other methods that carry the setter's job further down (a helper on the inner model).
    delegate_methods: tuple[str, ...] = ()
    # Methods that give a model's default layers; the runner calls some of them and an
    # override of one it never calls is dead code.
    default_methods: tuple[str, ...] = ()

    def is_entry_module(self, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, pat) for pat in self.entry_modules)

    def is_draft(self, module: str, class_name: str) -> bool:
        last = module.rsplit(".", 1)[-1]
        return any(fnmatch.fnmatchcase(class_name, p) or fnmatch.fnmatchcase(last, p) for p in self.draft_patterns)

    def is_runner_module(self, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, pat) for pat in self.runner_modules)

    @functools.cached_property
    def scope(self) -> str:
        """The package all entry and runner modules share ("sglang.srt"); a scan
        reads only modules inside it. "" means everything."""
        prefixes = [p.split("*")[0].rstrip(".").split(".") for p in self.entry_modules + self.runner_modules]
        if getattr(self, "registry_module", ""):
            prefixes.append(self.registry_module.split("."))
        if not prefixes:
            return ""
        common = []
        for parts in zip(*prefixes):
            if len(set(parts)) != 1 or not parts[0]:
                break
            common.append(parts[0])
        return ".".join(common)

    def in_scope(self, module: str) -> bool:
        scope = self.scope
        return not scope or module == scope or module.startswith(scope + ".")

    @property
    def tokens(self) -> tuple[str, ...]:
        """Names whose presence in a file means the file must be fully indexed."""
        names = (self.setter, self.state_attribute, self.output_flag, *self.delegate_methods, *self.default_methods)
        return tuple(t for t in names if t)


def _get(data: dict, key: str, source: str, default=None, required: bool = False):
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            if required:
                raise ProtocolError(f"{source}: missing required key '{key}'")
            return default
        node = node[part]
    return node


def parse_protocol(text: str, source: str) -> Protocol:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolError(f"{source}: invalid TOML: {exc}") from None
    g = lambda key, default=None, required=False: _get(data, key, source, default, required)  # noqa: E731
    as_tuple = lambda v: tuple(v) if isinstance(v, (list, tuple)) else ((v,) if v else ())  # noqa: E731
    return Protocol(
        name=g("name", required=True),
        framework=g("framework", required=True),
        description=g("description", ""),
        setter=g("setter", required=True),
        state_attribute=g("state_attribute", required=True),
        output_flag=g("output_flag", ""),
        ids_parameter=g("ids_parameter", "layer_ids"),
        id_shift=int(g("id_shift", 0)),
        package=g("detect.package", required=True),
        markers=as_tuple(g("detect.markers", [])),
        entry_variable=g("entry.variable", "EntryClass"),
        entry_modules=as_tuple(g("entry.modules", [])),
        draft_patterns=as_tuple(g("entry.draft_patterns", [])),
        runner_modules=as_tuple(g("runner.modules", [])),
        runner_roots=as_tuple(g("runner.roots", [])),
        graph_capture_calls=as_tuple(g("runner.graph_capture_calls", [])),
        graph_capture_classes=as_tuple(g("runner.graph_capture_classes", [])),
        state_markers=as_tuple(g("state_markers", [])),
        fallback_description=g("fallback.description", ""),
        draft_ids_keys=as_tuple(g("config.draft_ids_keys", [])),
        draft_count_keys=as_tuple(g("config.draft_count_keys", [])),
        target_text_config_keys=as_tuple(g("config.target_text_config_keys", [])),
        source=source,
        entry_kind=g("entry.kind", "module-variable"),
        registry_module=g("entry.registry_module", ""),
        registry_variables=as_tuple(g("entry.registry_variables", [])),
        registry_package=g("entry.registry_package", ""),
        registry_factories=as_tuple(g("entry.registry_factories", [])),
        registry_factory_keyword=g("entry.registry_factory_keyword", "architectures"),
        registry_factory_class_keywords=as_tuple(g("entry.registry_factory_class_keywords", [])),
        delegate_methods=as_tuple(g("delegate_methods", [])),
        default_methods=as_tuple(g("defaults.methods", [])),
    )


def builtin_protocols() -> list[Protocol]:
    packs = []
    folder = resources.files("tracer._rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            packs.append(parse_protocol(entry.read_text(encoding="utf-8"), f"rules/{entry.name}"))
    return packs


def load_protocols(names: list[str] | None = None, extra_files: list[str] | None = None) -> list[Protocol]:
    """Built-in packs plus ``--rules`` files, filtered by ``--protocol`` names."""
    packs = builtin_protocols()
    for path in extra_files or []:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ProtocolError(f"{path}: cannot read rules file: {exc.strerror}") from None
        pack = parse_protocol(text, path)
        packs = [p for p in packs if p.name != pack.name] + [pack]
    if names:
        known = {p.name: p for p in packs}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ProtocolError(f"unknown protocol {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        packs = [known[n] for n in names]
    return packs
