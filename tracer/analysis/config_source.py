"""Ids that travel on the model's config object: who writes them, for which models.

Some frameworks have no setter. The layer ids are decided while the model config is
built: a *config builder* (a subclass of one of the pack's ``builder_bases``),
chosen at run time by its ``condition`` method, writes ``<config>.<attr> = ...``;
the model reads the attribute in its ``__init__``. This module finds the builders
(never importing them), reads which configs each one accepts (the string
constants its condition compares against: registry architectures, or model types
the pack maps to architectures), and where each writes the attribute, following a
build that hands the config to another builder's build (``Other.build(cfg)``,
``super().build(cfg)``). The chain then starts at those writes and continues in
the entry's ``__init__`` (flow.py: the config is a :class:`Carrier`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tracer.analysis.entries import registry_table
from tracer.analysis.flow import FlowAnalysis
from tracer.bind.syntax import super_call
from tracer.model.protocol import Protocol
from tracer.resolve.resolver import ClassRef, Resolver

MAX_BUILDER_CALLS = 8  # builds handing the config on, one inside the other


@dataclass(frozen=True)
class ConfigWrite:
    """One builder whose build stores the ids on the config, and for which configs."""

    builder: ClassRef  # the builder the runner picks by its condition
    writer: ClassRef  # the builder whose method holds the write (itself or one it calls)
    method: str
    file: str
    line: int
    col: int
    target: str  # source of the target, "hf_config.<attr>"
    accepts: tuple[str, ...]  # the names its condition tests (architectures or model types)
    architectures: tuple[str, ...]  # the registry architectures those names select


class ConfigSources:
    """The builders of one tree for one protocol, read once."""

    def __init__(self, resolver: Resolver, protocol: Protocol, flow: FlowAnalysis):
        self.resolver = resolver
        self.protocol = protocol
        self.flow = flow
        self._writes: list[ConfigWrite] | None = None
        self.architectures: dict[str, list[str]] = {}  # entry fullname -> registered architectures
        for row in registry_table(resolver.project, protocol):
            found = resolver.resolve_class(row.module, row.class_name) if row.module in resolver.project.by_module \
                else None
            if isinstance(found, ClassRef):
                self.architectures.setdefault(found.fullname, []).append(row.architecture)
        self.model_types: dict[str, list[str]] = {}
        for item in protocol.model_types:
            name, _, arch = item.partition("=")
            self.model_types.setdefault(name.strip(), []).append(arch.strip())

    def writes_for(self, entry: ClassRef) -> list[ConfigWrite]:
        """The builder writes that apply to a config naming one of ``entry``'s architectures."""
        names = set(self.architectures.get(entry.fullname, ()))
        return [w for w in self.writes() if names & set(w.architectures)]

    def writes(self) -> list[ConfigWrite]:
        if self._writes is None:
            self._writes = self._find()
        return self._writes

    # -- reading the builders ------------------------------------------------------------------------
    def _builders(self) -> list[ClassRef]:
        project = self.resolver.project
        bases = set(self.protocol.builder_bases)
        found: list[ClassRef] = []
        for module in sorted(project.summaries):
            summary = project.summaries.get(module)
            if summary is None or summary.error or not self.protocol.in_scope(module):
                continue
            for cls in summary.classes:
                ref = ClassRef(module, cls.qualname)
                if ref.name in bases:
                    continue
                classes, _ = self.resolver.mro(ref)
                if any(c.name in bases for c in classes[1:]):
                    found.append(ref)
        return found

    def _find(self) -> list[ConfigWrite]:
        found: list[ConfigWrite] = []
        for builder in self._builders():
            accepts = [name for name in self._accepts(builder) if self._architectures_of(name)]
            if not accepts:
                continue  # it builds no config of a registered model
            architectures = [a for name in accepts for a in self._architectures_of(name)]
            for method in self.protocol.builder_methods:
                for writer, name, line, col, target in self._writes_in(builder, method, 0, set()):
                    found.append(ConfigWrite(builder, writer, name, self.flow.path_of(writer.module), line, col,
                                             target, tuple(accepts), tuple(dict.fromkeys(architectures))))
        return found

    def _architectures_of(self, name: str) -> list[str]:
        known = {a for archs in self.architectures.values() for a in archs}
        return ([name] if name in known else []) + self.model_types.get(name, [])

    def _accepts(self, builder: ClassRef) -> list[str]:
        """String constants the builder's condition compares against (its own or inherited)."""
        found = self.resolver.find_method(builder, self.protocol.builder_condition)
        if found is None:
            return []
        parsed = self.flow.function(found[0], self.protocol.builder_condition)
        if parsed is None:
            return []
        names: list[str] = []
        for node in ast.walk(parsed[0]):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    for const in ast.walk(side):
                        if isinstance(const, ast.Constant) and isinstance(const.value, str):
                            names.append(const.value)
        return list(dict.fromkeys(names))

    def _writes_in(self, cls: ClassRef, method: str, depth: int,
                   seen: set[tuple[ClassRef, str]]) -> list[tuple[ClassRef, str, int, int, str]]:
        found_method = self.resolver.find_method(cls, method)
        if found_method is None or depth > MAX_BUILDER_CALLS:
            return []
        owner = found_method[0]
        if (owner, method) in seen:
            return []
        seen.add((owner, method))
        parsed = self.flow.function(owner, method)
        if parsed is None:
            return []
        node, offset = parsed
        attr = self.protocol.config_attribute
        out: list[tuple[ClassRef, str, int, int, str]] = []
        for sub in ast.walk(node):
            targets = sub.targets if isinstance(sub, ast.Assign) else \
                [sub.target] if isinstance(sub, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == attr:
                    out.append((owner, method, target.lineno + offset, target.col_offset, ast.unparse(target)))
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in self.protocol.builder_methods:
                callee = self._callee_class(owner, sub.func.value)
                if callee is not None:
                    after = owner if isinstance(sub.func.value, ast.Call) else None
                    start = self.resolver.find_method(callee, sub.func.attr, after=after)
                    if start is not None:
                        out.extend(self._writes_in(start[0], sub.func.attr, depth + 1, seen))
        return out

    def _callee_class(self, owner: ClassRef, receiver: ast.expr) -> ClassRef | None:
        """``Other.build(...)``: the class Other; ``super().build(...)``: the owner (searched after it)."""
        if super_call(receiver) is not None:
            return owner
        if isinstance(receiver, ast.Name) and receiver.id in ("cls", "self"):
            return None  # the builder's own method: already read as part of it
        if isinstance(receiver, (ast.Name, ast.Attribute)):
            found = self.resolver.resolve_class(owner.module, ast.unparse(receiver))
            return found if isinstance(found, ClassRef) else None
        return None


__all__ = ["ConfigSources", "ConfigWrite"]
