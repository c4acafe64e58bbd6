"""``if name.startswith("p_"):`` (or ``name[:2] == "p_"``): where the test holds, the local
``name`` is a name of that start. PLY collects its grammar actions as
``[f for f in ldict if f[:2] == "t_"]`` and ``if not name.startswith("p_"): continue``; a name of
an attribute (``("n", base, prefix)``, members.py) narrowed so reads only the attributes of that
start, a known string that does not start so is dropped, one known by its start keeps the longer
start. Anything else (a string from outside the tree) passes.

The compiler (:func:`prefix_narrowings`) rebinds the tested local to a new variable
``("strpre", dst, src, prefix)`` in the branch where the test holds: the ``if``'s body, the
``else`` (and what follows a body that cannot fall through) of ``if not ...`` or of an ``or`` of
which one operand is ``not ...``, a comprehension's element after its ``if``. ``hasattr(f, "x")``
likewise lets into its branch only the functions the program sets ``f.x`` on
(:func:`hasattr_gate`)."""

from __future__ import annotations

import ast
from typing import Any

from tracer.bind.syntax import hasattr_test

Value = tuple[Any, ...]
STRPRE, HASATTR = "<startswith>", "<hasattr>"  # tags no annotation's class name can be
NAME_TESTS = (STRPRE, HASATTR)


def prefix_test(node: ast.expr) -> tuple[str, str] | None:
    """(local name, prefix) when ``node`` is ``NAME.startswith(CONST)`` or ``NAME[:k] == CONST``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith"
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.func.value.id, node.args[0].value
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        for a, b in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
            if (isinstance(a, ast.Subscript) and isinstance(a.value, ast.Name) and isinstance(a.slice, ast.Slice)
                    and a.slice.lower is None and a.slice.step is None and isinstance(a.slice.upper, ast.Constant)
                    and isinstance(b, ast.Constant) and isinstance(b.value, str)
                    and a.slice.upper.value == len(b.value)):
                return a.value.id, b.value
    return None


def has_test(node: ast.expr) -> tuple[str, str] | None:
    """(local name, attribute) when ``node`` is ``hasattr(NAME, CONST)`` (tracer.bind.syntax reads it)."""
    found = hasattr_test(node)
    if found is None or not isinstance(found.receiver, ast.Name):
        return None
    return found.receiver.id, found.name


def holding(test: ast.expr, negated: bool = False) -> list[tuple[str, str, str]]:
    """The tests that hold where ``test`` is true (``negated``: where it is false): (op, name, arg)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return holding(test.operand, not negated)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) != negated:  # all of them hold
        return [t for v in test.values for t in holding(v, negated)]
    if isinstance(test, ast.BoolOp) or negated:
        return []
    found = prefix_test(test)
    if found is not None:
        return [(STRPRE, *found)]
    has = has_test(test)
    return [(HASATTR, *has)] if has is not None else []


def prefix_narrowings(c: Any, scope: Any, test: ast.expr, negated: bool = False) -> list[tuple[str, int]]:
    """(name, narrowed var) for each local a test of ``test`` narrows where it is true (emitted)."""
    if scope.kind == "class":
        return []
    out: list[tuple[str, int]] = []
    for op, name, arg in holding(test, negated):
        if name not in scope.env or name in scope.global_decl or name in scope.nonlocal_decl:
            continue
        src = c.read(scope, name)
        if src < 0:
            continue
        dst = c.var()
        c.emit("narrow", dst, (src,), (op, arg))  # the narrow opcode, told apart by its tag (name_test)
        out.append((name, dst))
    return out


def name_test(s: Any, tag: str, dst: int, src: int, arg: str) -> None:
    """The solver's side of a ``("narrow", dst, (src,), (tag, arg))`` a name test emitted."""
    if tag == STRPRE:
        s.on(src, ("", strpre_value, dst, arg))
    else:
        hasattr_gate(s, dst, src, arg)


def strpre_value(s: Any, v: Value, dst: int, prefix: str) -> None:
    """What of ``v`` can start with ``prefix``."""
    if v[0] == "k" and v[1] == "str":
        if isinstance(v[2], str) and v[2].startswith(prefix):
            s.add(dst, (v,))
    elif v[0] == "n" or v[0] == "k" and v[1] == "prefix":
        known = v[2]
        if known.startswith(prefix):
            s.add(dst, (v,))
        elif prefix.startswith(known):
            s.add(dst, (s.V(*v[:-1], prefix),))
    elif v[0] != "k":
        s.add(dst, (v,))


# -- hasattr(fn, "name"): a function only where the program set that attribute on it ------------
def hasattr_gate(s: Any, dst: int, src: int, name: str) -> None:
    """``if hasattr(f, "_params"):`` lets a function (or a method bound from it) into the body only
    where the program sets ``f._params`` (a decorator marking the functions it applies to); every
    other value passes (an instance's attribute may come from anywhere)."""
    s.__dict__.setdefault("hasattr_gates", {}).setdefault(name, []).append((src, dst))
    s.on(src, ("", gate_value, dst, name))


def gate_value(s: Any, v: Value, dst: int, name: str) -> None:
    if v[0] not in ("f", "b", "sm", "cm") or (v[1], name) in s.__dict__.get("func_attrs", ()):
        s.add(dst, (v,))


def func_attr_set(s: Any, v: Value, name: str) -> None:
    """``f.name = x`` on a function of the tree: hasattr(f, name) may hold (the gates see it)."""
    attrs = s.__dict__.setdefault("func_attrs", set())
    if (v[1], name) in attrs:
        return
    attrs.add((v[1], name))
    for src, dst in s.__dict__.get("hasattr_gates", {}).get(name, ()):
        s.add(dst, [u for u in tuple(s.pts.get(src, ())) if u[0] in ("f", "b", "sm", "cm") and u[1] == v[1]])
