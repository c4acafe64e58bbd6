"""Names bound on several branches (a platform check, `try: import ... except ImportError`,
a PEP 562 module `__getattr__`): every binding, the tests it sits under, and which one
is the default: the one the pack's platform takes at run time.

Tests are read as mypy's and pyright's `--platform`/`always_true` read them, for
the run time rather than for a type checker: a predicate `is_<p>()` (a method or a
plain function) holds when `<p>` is the platform or starts with it plus `_`
(`is_cuda`, `is_cuda_alike` on "cuda") and fails otherwise; `device_type == "<p>"`
compares the platform's name; a try body runs; `TYPE_CHECKING` is False, unless no
binding holds without it (a module whose `__getattr__` picks the class in a way the
outline cannot read, its TYPE_CHECKING import then stands for it). A binding whose
tests cannot be decided is not the default; when none is, the verdict is unknown,
naming the tests.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass

from tracer.resolve.resolver import ClassRef, Resolver, Symbol, Untyped

Condition = tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class Binding:
    condition: Condition
    target: ClassRef | Untyped
    line: int
    default: bool = False  # taken at run time on the pack's platform (see mark_defaults)

    @property
    def text(self) -> str:
        return condition_text(self.condition)


def condition_text(condition: Condition) -> str:
    parts = []
    for test, positive in condition:
        if test == "<try>":
            parts.append("the import succeeds" if positive else "the import fails (ImportError)")
        elif test == "<lazy>":
            parts.append("looked up through the module's __getattr__")
        else:
            parts.append(test if positive else f"not ({test})")
    return " and ".join(parts) or "always"


def _predicate(name: str, platform: str) -> bool:
    wanted = name[len("is_"):]
    return bool(platform) and (wanted == platform or wanted.startswith(platform + "_"))


def _assumed(node: ast.expr, platform: str, type_checking: bool) -> bool | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _assumed(node.operand, platform, type_checking)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        values = [_assumed(v, platform, type_checking) for v in node.values]
        if isinstance(node.op, ast.And):
            return False if False in values else (True if all(v is True for v in values) else None)
        return True if True in values else (False if all(v is False for v in values) else None)
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.startswith("is_"):
            return _predicate(name, platform)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) \
            and isinstance(node.left, ast.Attribute) and node.left.attr == "device_type" \
            and isinstance(node.comparators[0], ast.Constant) and isinstance(node.comparators[0].value, str):
        same = node.comparators[0].value == platform
        return same if isinstance(node.ops[0], ast.Eq) else not same
    if (isinstance(node, ast.Name) and node.id == "TYPE_CHECKING") or \
            (isinstance(node, ast.Attribute) and node.attr == "TYPE_CHECKING"):
        return type_checking
    return None


def holds(condition: Condition, platform: str = "", type_checking: bool = False) -> bool | None:
    """Whether the tests hold at run time on ``platform`` (None: they cannot be decided)."""
    answer: bool | None = True
    for test, positive in condition:
        if test in ("<try>", "<lazy>"):
            value: bool | None = True
        else:
            try:
                value = _assumed(ast.parse(test, mode="eval").body, platform, type_checking)
            except SyntaxError:
                value = None
        if value is None:
            answer = None
            continue
        if value != positive:
            return False
    return answer


def mark_defaults(found: list[Binding], platform: str) -> list[Binding]:
    """The bindings with ``default`` set: those that hold on ``platform``; when none
    does, those that hold with TYPE_CHECKING taken as True (the declared class)."""
    for type_checking in (False, True):
        chosen = [dataclasses.replace(b, default=holds(b.condition, platform, type_checking) is True) for b in found]
        if any(b.default for b in chosen):
            return chosen
    return found


def bindings(resolver: Resolver, module: str, name: str, platform: str = "") -> list[Binding]:
    """Every binding of ``name`` in ``module`` when it is bound more than once and at
    least once conditionally; [] for an ordinary name."""
    summary = resolver.project.module(module)
    if summary is None or summary.error:
        return []
    found: list[Binding] = []
    for cls in summary.classes:
        if cls.qualname == name:
            found.append(Binding(cls.condition, ClassRef(module, name), cls.line))
    for imp in summary.imports:
        if imp.local == name:
            symbol: Symbol = resolver.resolve_absolute(imp.target)
            target: ClassRef | Untyped = (ClassRef(symbol.module, symbol.qualname) if symbol.kind == "class"
                                          else Untyped(symbol.why or f"{imp.target} is not a class of the tree"))
            found.append(Binding(imp.condition, target, imp.line))
    if len(found) < 2 or not any(b.condition for b in found):
        return []
    return mark_defaults(found, platform)
