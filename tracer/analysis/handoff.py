"""The hand-off: the top forward that runs must pass the captured states on.

Under the protocol's output flag (``if self.capture_aux_hidden_states:``) the top
forward unpacks what the inner model returns; a name bound there that nothing in
the forward ever uses again (not returned, not passed to the logits processor,
not stored) means the states were captured and then dropped on the floor.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tracer.analysis.flow import FlowAnalysis
from tracer.resolve.resolver import ClassRef, Resolver


@dataclass(frozen=True)
class Dropped:
    cls: ClassRef  # the class whose forward runs
    method: str
    line: int  # the statement that binds the unused name (file line)
    col: int
    name: str
    flag_line: int


def _reads_flag(test: ast.expr, flag: str) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == flag and isinstance(n.value, ast.Name)
               and n.value.id == "self" for n in ast.walk(test))


def _stored(node: ast.stmt) -> list[tuple[str, ast.stmt]]:
    found: list[tuple[str, ast.stmt]] = []
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        found.append((name.id, sub))
    return found


def dropped_aux(flow: FlowAnalysis, resolver: Resolver, entry: ClassRef, flag: str,
                forward_methods: tuple[str, ...]) -> Dropped | None:
    """The first name the running forward binds under ``self.<flag>`` and never uses."""
    if not flag:
        return None
    for name in forward_methods:
        found = resolver.find_method(entry, name)
        if found is None:
            continue
        cls, fn = found
        parsed = flow.function(cls, fn.name)
        if parsed is None:
            return None
        node, offset = parsed
        loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for branch in ast.walk(node):
            if not (isinstance(branch, ast.If) and _reads_flag(branch.test, flag)):
                continue
            for stmt in branch.body:
                for bound, where in _stored(stmt):
                    if bound not in loaded and not bound.startswith("_"):
                        return Dropped(cls, fn.name, where.lineno + offset, where.col_offset, bound,
                                       branch.lineno + offset)
        return None  # the first forward method found is the one that runs
    return None
