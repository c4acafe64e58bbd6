"""Entry classes: the classes a framework's registry can instantiate, per protocol."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tracer.index.decorators import duplicates, read_decorated
from tracer.index.project import Project
from tracer.index.registry import (
    Duplicate,
    RegistryEntry,
    read_registration_calls,
    read_registry,
    read_registry_updates,
)
from tracer.model.protocol import Protocol
from tracer.resolve.bindings import Binding, bindings
from tracer.resolve.resolver import ClassRef, Resolver

# entry fullname (the binding traced) -> (the dotted name the registry uses, every binding of it)
Alternatives = dict[str, tuple[str, list[Binding]]]
# entry fullname -> further rows for it: the registry names the same class under other names
# (vLLM 0.33.0: `from .nvidia.model import DeepseekV32ForCausalLM as GlmMoeDsaForCausalLM` beside
# the class's own row), each traced on its own bindings and named as the registry names it
Aliases = dict[str, list[tuple[str, list[Binding]]]]


def _pick(resolver: Resolver, proto: Protocol, module: str, name: str, alternatives: Alternatives) -> ClassRef | None:
    """The class a registered name denotes; for a name bound on several branches, the
    default binding (else the first), with every binding kept in ``alternatives``."""
    found = bindings(resolver, module, name, proto.platform) if "." not in name else []
    classes = [b for b in found if isinstance(b.target, ClassRef)]
    if not classes:
        resolved = resolver.resolve_class(module, name)
        return resolved if isinstance(resolved, ClassRef) else None
    chosen = next((b for b in classes if b.default), classes[0])
    assert isinstance(chosen.target, ClassRef)
    alternatives.setdefault(chosen.target.fullname, (f"{module}.{name}", found))
    return chosen.target


def registered_in(project: Project, resolver: Resolver, proto: Protocol, module: str,
                  alternatives: Alternatives | None = None) -> list[ClassRef]:
    """Classes the module-level registry variable (``EntryClass``) of ``module`` names."""
    alternatives = {} if alternatives is None else alternatives
    summary = project.module(module)
    if summary is None or summary.error:
        return []
    found = []
    for name, values, _ in summary.assignments:
        if name != proto.entry_variable:
            continue
        for value in values:
            resolved = _pick(resolver, proto, module, value, alternatives)
            if resolved is not None:
                found.append(resolved)
    return found


def entry_classes(project: Project, resolver: Resolver, protocols: Sequence[Protocol],
                  alternatives: Alternatives | None = None, aliases: Aliases | None = None
                  ) -> dict[str, list[ClassRef]]:
    """Entry classes per protocol: from each entry module's registry variable, or from
    a registry dict literal (which also teaches the resolver the registry's factories).
    Names bound on several branches give their default binding; ``alternatives``
    receives every binding."""
    alternatives = {} if alternatives is None else alternatives
    entries: dict[str, list[ClassRef]] = {}
    for proto in protocols:
        if proto.entry_kind == "decorator":
            entries[proto.name] = _decorated_classes(project, resolver, proto, alternatives)
            continue
        if proto.entry_kind in ("registry-dict", "registry-update"):
            entries[proto.name] = _registry_classes(project, resolver, proto, alternatives,
                                                    {} if aliases is None else aliases)
            continue
        found: dict[str, ClassRef] = {}
        for module in sorted(project.by_module):
            if proto.is_entry_module(module) and project.summaries.get(module) is not None:
                for ref in registered_in(project, resolver, proto, module, alternatives):
                    found.setdefault(ref.fullname, ref)
        entries[proto.name] = sorted(found.values(), key=lambda r: r.fullname)
    return entries


def _registry_classes(project: Project, resolver: Resolver, proto: Protocol,
                      alternatives: Alternatives, aliases: Aliases) -> list[ClassRef]:
    """Entry classes named by a registry dict literal; the architecture -> class map is
    also handed to the resolver for factories that build a class from its architecture.
    A class the registry names under several dotted names gets a row for each (``aliases``)."""
    # a plugin's registrations by call come first: they replace the host's rows of their architectures
    table = plugin_registrations(project, proto) + registry_table(project, proto) + registry_table(
        project, proto, proto.draft_registry_variables)
    by_architecture: dict[str, ClassRef] = {}
    names_of: dict[str, dict[str, tuple[str, str]]] = {}  # class -> registered dotted name -> (module, name)
    for item in table:
        if item.architecture in by_architecture or proto.is_excluded(item.class_name):
            continue  # a target table's row wins over a draft table's
        if item.module in project.by_module:
            resolved = _pick(resolver, proto, item.module, item.class_name, alternatives)
            if resolved is not None:
                by_architecture[item.architecture] = resolved
                names_of.setdefault(resolved.fullname, {})[f"{item.module}.{item.class_name}"] = (
                    item.module, item.class_name)
    for target, names in names_of.items():
        # the row the class already has: named by its bindings' registered name, else its own
        # (the first registered name stands for it when the registry never names it directly)
        primary = alternatives[target][0] if target in alternatives else target if target in names else next(iter(names))
        for dotted, (module, name) in names.items():
            if dotted != primary and dotted != target:
                aliases.setdefault(target, []).append(
                    (dotted, bindings(resolver, module, name, proto.platform) if "." not in name else []))
    for factory in (*proto.registry_factories, *renamed_factories(project, proto)):
        resolver.registry_factories[factory] = (proto.registry_factory_keyword, by_architecture)
    resolver.registry_class_keywords.update(proto.registry_factory_class_keywords)
    return sorted(set(by_architecture.values()), key=lambda r: r.fullname)


def plugin_registrations(project: Project, proto: Protocol) -> list[RegistryEntry]:
    """Rows the plugins register by call (``ModelRegistry.register_model("Arch", "mod:Class")``)."""
    if not proto.plugin_packages or not proto.registration_calls:
        return []
    names = {c.rpartition(".")[2] for c in proto.registration_calls}
    rows: list[RegistryEntry] = []
    for module in sorted(project.by_module):
        if proto.in_plugin(module) and any(project.mentions(module, n) for n in names):
            text = project.text(module)
            rows.extend(read_registration_calls(text, proto.registration_calls) if text else [])
    return rows


def renamed_factories(project: Project, proto: Protocol) -> list[str]:
    """Factories a fork renamed, found by their shape: a module-level function of the registry
    package that takes the factory keyword (``architectures``) and calls one of the pack's
    factories (vLLM's ``init_vllm_registered_model`` calls ``initialize_model``)."""
    known = set(proto.registry_factories)
    if not known or not proto.registry_package:
        return []
    found = []
    for module in sorted(project.by_module):
        if not (module == proto.registry_package or module.startswith(proto.registry_package + ".")):
            continue
        if not project.mentions(module, proto.registry_factory_keyword) or not any(
                project.mentions(module, name) for name in known):
            continue
        summary = project.module(module)
        for name, _, _ in summary.spans() if summary is not None and not summary.error else ():
            if name in known or "." in name:
                continue
            fn = project.function(module, name)
            if fn is not None and any(p.name == proto.registry_factory_keyword for p in fn.params) and any(
                    c.func.rpartition(".")[2] in known for c in fn.calls):
                found.append(name)
    return found


def decorated_table(project: Project, proto: Protocol) -> list[RegistryEntry]:
    """Rows of a decorator registry (``@register("Arch")`` above a class), module by module."""
    rows: list[RegistryEntry] = []
    for module in sorted(project.by_module):
        if not proto.is_entry_module(module):
            continue
        text = project.text(module)
        if text and any(name in text for name in proto.entry_decorators):
            rows.extend(read_decorated(text, module, proto.entry_decorators))
    return rows


def _decorated_classes(project: Project, resolver: Resolver, proto: Protocol,
                       alternatives: Alternatives) -> list[ClassRef]:
    found: dict[str, ClassRef] = {}
    for item in decorated_table(project, proto):
        resolved = _pick(resolver, proto, item.module, item.class_name, alternatives)
        if resolved is not None:
            found.setdefault(resolved.fullname, resolved)
    return sorted(found.values(), key=lambda r: r.fullname)


def registry_duplicates(project: Project, proto: Protocol) -> list[Duplicate]:
    """Names the pack's registry registers twice (a dict literal keeps no duplicates: Python drops them)."""
    if proto.entry_kind == "decorator":
        return duplicates(decorated_table(project, proto))
    if proto.entry_kind == "registry-update":
        data = project.data(proto.registry_module)
        if data is None:
            return []
        return read_registry_updates(data.decode("utf-8", errors="replace"), proto.registry_variables)[1]
    return []


def registry_table(project: Project, proto: Protocol, variables: tuple[str, ...] | None = None) -> list[RegistryEntry]:
    """The registry's architecture -> (module, class) rows, as the pack says it is written
    (the pack's target variables unless ``variables`` names others)."""
    variables = proto.registry_variables if variables is None else variables
    data = project.data(proto.registry_module) if variables else None
    if data is None:
        return []
    text = data.decode("utf-8", errors="replace")
    if proto.entry_kind == "registry-update":
        return read_registry_updates(text, variables)[0]
    return read_registry(text, variables, proto.registry_package)


def registry_drafts(resolver: Resolver, proto: Protocol) -> set[str]:
    """Full names of the classes only the pack's draft variables register (vLLM's
    ``_SPECULATIVE_DECODING_MODELS``): draft heads, whatever their names."""
    if not proto.draft_registry_variables and not proto.plugin_packages:
        return set()

    def classes(rows: list[RegistryEntry]) -> set[str]:
        found: set[str] = set()
        for row in rows:
            if row.module in resolver.project.by_module:
                resolved = _pick(resolver, proto, row.module, row.class_name, {})
                if resolved is not None:  # the class, and the name a registry renames its result to
                    found.update((resolved.fullname, f"{row.module}.{row.class_name}"))
        return found
    project = resolver.project
    plugged = plugin_registrations(project, proto)
    drafted = [r for r in plugged if any(fnmatch.fnmatchcase(r.architecture, p) for p in proto.plugin_draft_architectures)]
    return (classes(registry_table(project, proto, proto.draft_registry_variables)) | classes(drafted)) - classes(
        registry_table(project, proto) + [r for r in plugged if r not in drafted])
