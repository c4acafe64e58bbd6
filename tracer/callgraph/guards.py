"""``if isinstance(x, C):``: in the body, the local ``x`` holds only what can pass the test.

The compiler (:func:`narrowings`) rebinds each local an ``isinstance`` test of the ``if`` (or a
conjunct of an ``and``) names to a new variable, ``("isa", dst, src, (class vars...))``, for the
body only; the solver (:func:`isa_instr`) lets into it the instances of the tree whose class has
one of the tested classes in its MRO, and what comes from outside the tree (it may be anything).
Where a tested class is no class of the tree (``str``, an import from outside, a value never
resolved), the test proves nothing and everything passes. Without it a branch such as
``elif isinstance(token, (Identifier, Function)): token.get_real_name()`` calls the method of
every class the token may be, classes the test excludes.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from tracer.callgraph.abstract import never_made, stand_in
from tracer.callgraph.raised import handler_of

Value = tuple[Any, ...]


def narrowings(c: Any, scope: Any, test: ast.expr) -> list[tuple[str, int]]:
    """(name, narrowed var) for each local an ``isinstance`` test of ``test`` narrows (emitted)."""
    if scope.kind == "class" or "isinstance" in c.ns:
        return []
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    out: list[tuple[str, int]] = []
    for t in tests:
        if not (isinstance(t, ast.Call) and isinstance(t.func, ast.Name) and t.func.id == "isinstance"
                and len(t.args) == 2 and not t.keywords and isinstance(t.args[0], ast.Name)):
            continue
        name = t.args[0].id
        if name not in scope.env or name in scope.global_decl or name in scope.nonlocal_decl:
            continue
        kinds = t.args[1].elts if isinstance(t.args[1], ast.Tuple) else [t.args[1]]
        if not kinds or any(isinstance(k, ast.Starred) for k in kinds):
            continue
        src = c.read(scope, name)
        classes = tuple(c.expr(scope, k) for k in kinds)
        if src < 0 or any(v < 0 for v in classes):
            continue
        dst = c.var()
        c.emit("isa", dst, src, classes)
        out.append((name, dst))
    return out


def narrowing(s: Any, dst: int, src: int, classes: tuple[int, ...], select: Callable[[bool], list | None]) -> None:
    """The watcher of a narrowing of ``src`` into ``dst`` by a test of the names ``classes``
    (isinstance here, ``type(x) is C`` in typetests.py): ``select(last_round)`` gives the values
    let through now, or None when the test proves nothing (then everything passes, for good).
    Run again when src or a tested name changes, and once more in the late round (late bases)."""
    state = [False, False]  # open; the last round
    if src in s.param_vars:  # the parameter still: what the body reads on it types it (seeds.seed_params)
        s.param_vars.add(dst)

    def open_all() -> None:
        if not state[0]:
            state[0] = True
            s.edge(src, dst)

    def refresh(_: Any = ()) -> None:
        if state[0]:
            return
        keep = select(state[1])
        if keep is None:
            open_all()
        else:
            s.add(dst, keep)

    def last() -> None:
        state[1] = True
        refresh()

    s.on(src, refresh)
    for c in classes:
        s.on(c, refresh)
        s.when_empty(c, open_all, late=True)
    s.deferred.append((True, lambda: True, last))


def isa_instr(s: Any, dst: int, src: int, classes: tuple[int, ...]) -> None:
    def select(_: bool) -> list | None:
        tested = [v for c in classes for v in tuple(s.pts.get(c, ()))]
        if any(v[0] != "c" for v in tested):
            return None
        cids = {v[1] for v in tested}
        return [v for v in tuple(s.pts.get(src, ())) if v[0] == "x"
                or v[0] == "i" and not cids.isdisjoint(s.mro(v[1]))] if cids else []
    narrowing(s, dst, src, classes, select)


def caught(s: Any, dst: int, src: int) -> None:
    """``except E as e``: e is an instance of each class E holds (a tuple's too), and of each subclass
    of E the program raises (raised.handler_of)."""
    s.on(src, _Caught(s, dst, src))


class _Caught:
    """The three rules of ``caught`` as one watcher, in the same order (three tuples were ~13 MB of
    sglang/srt's 66,000 handlers)."""

    __slots__ = ("dst", "s", "src")

    def __init__(self, s: Any, dst: int, src: int):
        self.s, self.dst, self.src = s, dst, src

    def __call__(self, vals: tuple[Value, ...]) -> None:
        s, dst = self.s, self.dst
        for v in vals:
            if v[0] == "c":
                caught_instance(s, v, dst)
        for v in vals:
            if v[0] == "c":
                handler_of(s, v, dst)
        for v in vals:
            if v[0] == "o":
                caught_elements(s, v, self.src)


def caught_instance(s: Any, v: Value, dst: int) -> None:
    """``except E as e``: e is an instance of each class E holds (an abstract one: its concrete subclasses)."""
    s.add(dst, (s.V("i", v[1]),)) if not never_made(s, v[1]) else stand_in(s, v[1], dst)


def caught_elements(s: Any, v: Value, src: int) -> None:
    """``except (A, B) as e``: the classes of the tuple count as E's."""
    s.edge(s.elements(src, -1), src)
