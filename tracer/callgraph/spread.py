"""``f(*args)`` with ``args`` a tuple or list of known length (a literal, ``(T.Keyword, 'END')``):
element ``k`` binds the ``k``-th remaining positional parameter, not every one of them (every
element into every parameter made ``match(*pattern)`` see a token type as its ``values``). Any
other value (a container of unknown length, an instance, a generator) spreads its elements into
all of them, as before. A function of the solver (``s``), called from ``Calls.invoke``."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.generators import consumed

Value = tuple[Any, ...]


def spread(s: Any, var: int, caller: int, targets: list[int], star: Any) -> None:
    """The starred argument ``var`` into the parameter variables ``targets`` (in order) and, past
    them, the ``*args`` tuple ``star`` (None when there is none)."""
    rest = s.new_var()  # the elements of what has no known length: every target
    for target in targets:
        s.edge(rest, target)
    if star is not None:
        s.write(star, None, rest)
    s.on(var, ("", spread_value, rest, caller, tuple(targets), star))
    consumed(s, var, caller, 0)


def spread_value(s: Any, v: Value, rest: int, caller: int, targets: tuple[int, ...], star: Any) -> None:
    n = s.obj_len.get(v[1], -1) if v[0] == "o" and s.obj_kind.get(v[1]) in ("tuple", "list") else -1
    if n < 0:
        s.iter_value(v, rest, caller, 0)
        return
    for k in range(n):
        key = s.V("k", "int", k)
        if k < len(targets):
            s.read(v[1], key, targets[k])
        elif star is not None:
            slot = s.new_var()
            s.read(v[1], key, slot)
            s.write(star, None, slot)
