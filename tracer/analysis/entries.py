"""Entry classes: the classes a framework's registry can instantiate, per protocol."""

from __future__ import annotations

from collections.abc import Sequence

from tracer.index.project import Project
from tracer.index.registry import read_registry
from tracer.model.protocol import Protocol
from tracer.resolve.resolver import ClassRef, Resolver


def registered_in(project: Project, resolver: Resolver, proto: Protocol, module: str) -> list[ClassRef]:
    """Classes the module-level registry variable (``EntryClass``) of ``module`` names."""
    summary = project.module(module)
    if summary is None or summary.error:
        return []
    found = []
    for name, values, _ in summary.assignments:
        if name != proto.entry_variable:
            continue
        for value in values:
            resolved = resolver.resolve_class(module, value)
            if isinstance(resolved, ClassRef):
                found.append(resolved)
    return found


def entry_classes(project: Project, resolver: Resolver, protocols: Sequence[Protocol]) -> dict[str, list[ClassRef]]:
    """Entry classes per protocol: from each entry module's registry variable, or from
    a registry dict literal (which also teaches the resolver the registry's factories)."""
    entries: dict[str, list[ClassRef]] = {}
    for proto in protocols:
        if proto.entry_kind == "registry-dict":
            entries[proto.name] = _registry_classes(project, resolver, proto)
            continue
        found: dict[str, ClassRef] = {}
        for module in sorted(project.by_module):
            if proto.is_entry_module(module) and project.summaries.get(module) is not None:
                for ref in registered_in(project, resolver, proto, module):
                    found.setdefault(ref.fullname, ref)
        entries[proto.name] = sorted(found.values(), key=lambda r: r.fullname)
    return entries


def _registry_classes(project: Project, resolver: Resolver, proto: Protocol) -> list[ClassRef]:
    """Entry classes named by a registry dict literal; the architecture -> class map is
    also handed to the resolver for factories that build a class from its architecture."""
    data = project.data(proto.registry_module)
    if data is None:
        return []
    table = read_registry(data.decode("utf-8", errors="replace"), proto.registry_variables, proto.registry_package)
    by_architecture: dict[str, ClassRef] = {}
    for item in table:
        if item.module in project.by_module:
            resolved = resolver.resolve_class(item.module, item.class_name)
            if isinstance(resolved, ClassRef):
                by_architecture[item.architecture] = resolved
    for factory in proto.registry_factories:
        resolver.registry_factories[factory] = (proto.registry_factory_keyword, by_architecture)
    resolver.registry_class_keywords.update(proto.registry_factory_class_keywords)
    return sorted(set(by_architecture.values()), key=lambda r: r.fullname)
