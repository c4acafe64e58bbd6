"""Exact type tests narrow like ``isinstance`` (guards.py) does, and both narrow their negations.

``type(x) is C``, ``type(x) == C``, ``x.__class__ is C``, ``type(x) in (A, B)``: where the test holds
the local ``x`` is an instance of exactly one of the tested classes, so an instance of another class
of the tree is dropped (a tree class is never ``set``: ``type(x) in (set, frozenset)`` drops every
instance of the tree). Where it fails (``is not`` / ``not in`` / ``!=``, the ``else``, what follows
``if type(x) is C: return``) an instance of exactly C is dropped, when the tested name holds that one
class only. ``isinstance`` gets its negations here too: after ``if not isinstance(x, C): return`` x
is narrowed as in the test's body (the ``isa`` instruction), and in the ``else`` of
``isinstance(x, C)`` an instance whose MRO has C is dropped. ``assert`` narrows what follows it.

Each test is one ``("narrow", dst, (src, cls...), (tag,))`` instruction (tags no annotation's class
name can be, told apart in :meth:`Narrow.narrow_instr`). What the test cannot speak about passes:
values from outside the tree, classes, functions, constants; a tested value that is not a class of
the tree nor a builtin type (an import from outside, a value never resolved) lets everything pass.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from tracer.callgraph.guards import narrowing
from tracer.callgraph.prefixes import gate_value
from tracer.callgraph.prefixes import has_test as prefix_has_test

Value = tuple[Any, ...]
EXACT, NOT_EXACT, NOT_ISA, HAS = "<type-is>", "<type-is-not>", "<not-isinstance>", "<has-attr>"
TYPE_TESTS = (EXACT, NOT_EXACT, NOT_ISA, HAS)
BUILTIN_TYPES = frozenset(n for n in dir(builtins) if isinstance(getattr(builtins, n), type))


def _subject(node: ast.expr) -> str | None:
    """The local whose exact type ``node`` is: ``type(x)`` or ``x.__class__``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return node.args[0].id
    if isinstance(node, ast.Attribute) and node.attr == "__class__" and isinstance(node.value, ast.Name):
        return node.value.id
    return None


def _kinds(node: ast.expr) -> list[ast.expr] | None:
    kinds = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else None
    if kinds is None or not kinds or any(isinstance(k, ast.Starred) for k in kinds):
        return None
    return kinds


def _getattr_none(node: ast.expr) -> tuple[str, str] | None:
    """(local, attribute) of ``getattr(x, "name", None)`` / ``hasattr(x, "name")``."""
    found = prefix_has_test(node)
    if found is not None:
        return found
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and not node.keywords and len(node.args) == 3 and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
            and isinstance(node.args[2], ast.Constant) and node.args[2].value is None):
        return node.args[0].id, node.args[1].value
    return None


def has_test(test: ast.expr, negated: bool) -> tuple[str, str] | None:
    """(local, attribute) where ``test`` (``negated``: its failing) proves the local has it:
    ``hasattr(x, "n")``, ``getattr(x, "n", None)`` truthy or ``is not None``."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and right.value is None and isinstance(test.ops[0], ast.IsNot) != negated:
            found = _getattr_none(test.left)
            return found if found is not None and test.left.func.id == "getattr" else None  # type: ignore[attr-defined]
        return None
    return None if negated else _getattr_none(test)


def one_test(test: ast.expr, negated: bool) -> tuple[str, str, list[ast.expr]] | None:
    """(tag, local, class expressions) of one type test holding where ``test`` is true (``negated``:
    false); (HAS, local, [the attribute's name]) for an attribute test."""
    has = has_test(test, negated)
    if has is not None:
        return HAS, has[0], [ast.Constant(has[1])]
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords and isinstance(test.args[0], ast.Name)):
        kinds = _kinds(test.args[1]) if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
        return ((NOT_ISA if negated else "isa"), test.args[0].id, kinds) if kinds else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.In, ast.NotIn)):
        name, kinds = _subject(left), _kinds(right)
        holds = isinstance(op, ast.In) != negated
    elif isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        name, other = _subject(left), right
        if name is None:
            name, other = _subject(right), left
        kinds = [other]
        holds = isinstance(op, (ast.Is, ast.Eq)) != negated
    else:
        return None
    if name is None or not kinds:
        return None
    return (EXACT if holds else NOT_EXACT), name, kinds


def holding(test: ast.expr, negated: bool = False) -> list[tuple[str, str, list[ast.expr]]]:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return holding(test.operand, not negated)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) != negated:  # all of them hold
            return [t for v in test.values for t in holding(v, negated)]
        return []
    found = one_test(test, negated)
    return [found] if found else []


def type_narrowings(c: Any, scope: Any, test: ast.expr, negated: bool = False) -> list[tuple[str, int]]:
    """(name, narrowed var) for each local a type test of ``test`` narrows where it is true
    (``negated``: false); emitted."""
    if scope.kind == "class":
        return []
    out: list[tuple[str, int]] = []
    for tag, name, kinds in holding(test, negated):
        if tag == "isa" and not negated:
            continue  # the body of ``if isinstance(...)``: guards.narrowings
        if name not in scope.env or name in scope.global_decl or name in scope.nonlocal_decl:
            continue
        if any(k in c.ns for k in ("type", "isinstance")):
            continue  # shadowed
        src = c.read(scope, name)
        if tag == HAS:
            dst = c.var()
            c.emit("narrow", dst, (src,), (tag, kinds[0].value))  # type: ignore[attr-defined]
            out.append((name, dst))
            continue
        classes = tuple(c.expr(scope, k) for k in kinds)
        if src < 0 or any(v < 0 for v in classes):
            continue
        dst = c.var()
        if tag == "isa":
            c.emit("isa", dst, src, classes)
        else:
            c.emit("narrow", dst, (src, *classes), (tag,))
        out.append((name, dst))
    return out


def type_test(s: Any, tag: str, dst: int, src: int, classes: tuple[int, ...], names_arg: tuple[str, ...] = ()) -> None:
    """The solver's side of a ``("narrow", dst, (src, cls...), (tag,))``."""
    if tag == HAS:
        return has_attr(s, dst, src, names_arg[0])

    def select(last: bool) -> list | None:
        if tag == EXACT:
            cids: set[int] = set()
            for c in classes:
                for v in tuple(s.pts.get(c, ())):
                    if v[0] == "c":
                        cids.add(v[1])
                    elif not (v[0] == "B" and v[1] in BUILTIN_TYPES):
                        return None
            return [v for v in tuple(s.pts.get(src, ())) if v[0] != "i" or v[1] in cids]
        # one class per tested name, or nothing is known to fail
        single = [tuple(s.pts.get(c, ())) for c in classes]
        if not all(single) and not last:
            return []  # held until the tested names are known (a value let through is never taken back)
        drop = {vals[0][1] for vals in single if len(vals) == 1 and vals[0][0] == "c"}
        if tag == NOT_EXACT:
            return [v for v in tuple(s.pts.get(src, ())) if v[0] != "i" or v[1] not in drop]
        # an instance of a class with a base not known yet waits for the last round
        return [v for v in tuple(s.pts.get(src, ())) if v[0] != "i" or (
            drop.isdisjoint(s.mro(v[1])) and (last or not s.open_class(v[1])))]
    narrowing(s, dst, src, classes, select)


# -- after ``if not hasattr(x, "n"): return``: x is no instance of a class that provably lacks n ------
def has_attr(s: Any, dst: int, src: int, name: str) -> None:
    """Functions as ``prefixes.hasattr_gate`` lets them; an instance is held back while its class
    provably lacks ``name`` (every class of its MRO in the tree, none with the attribute, a
    ``__getattr__``, a ``setattr`` of an unknown name, and no ``obj.name = ...`` on it); checked
    again every round, let through once a write or a late base makes the attribute possible."""
    s.__dict__.setdefault("hasattr_gates", {}).setdefault(name, []).append((src, dst))
    if src in s.param_vars:
        s.param_vars.add(dst)
    held: list[Value] = []

    def value(v: Value) -> None:
        if v[0] in ("f", "b", "sm", "cm"):
            gate_value(s, v, dst, name)
        elif v[0] == "i" and lacks(s, v, name):
            if v not in held:
                held.append(v)
                if len(held) == 1:
                    s.deferred.append((False, lambda: bool(held), recheck))
        else:
            s.add(dst, (v,))

    def recheck() -> None:
        let = [v for v in held if not lacks(s, v, name)]
        held[:] = [v for v in held if v not in let]
        if let:
            s.add(dst, let)
        if held:
            s.deferred.append((False, lambda: bool(held), recheck))

    s.on(src, ("", value))


def lacks(s: Any, v: Value, name: str) -> bool:
    order = s.mro(v[1])
    for k in order:
        if k in s.dynamic_fields:
            return False
        for var in s.class_bases[k]:
            vals = tuple(s.pts.get(var, ()))
            if not vals or any(b[0] != "c" and b != ("B", "object") for b in vals):
                return False
    if any(s.lookup(v[1], n) is not None for n in (name, "__getattr__", "__getattribute__", "__slots__")):
        return False
    field = s.fields.get((v, name))
    return field is None or not s.pts.get(field, ())
