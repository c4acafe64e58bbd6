"""``except E as e``: ``e`` is an instance of ``E`` or of any subclass of ``E`` the program raises
(``raise Sub(...)``, ``raise Sub``, ``raise err`` of a known instance), so ``e.show()`` in a handler
of the base runs the override of what was raised. Only classes of the tree: a handler of a
builtin exception (``except Exception``) binds nothing more. Plain functions of the solver,
hooked from solve.py's ``raise`` and ``instance`` instructions."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Value


def raised_value(s: Any, v: Value) -> None:
    """A value a ``raise`` statement raises: a class (it is instantiated) or an instance."""
    if v[0] not in ("c", "i"):
        return
    cid = v[1]
    if cid in s.raised_classes:
        return
    s.raised_classes.add(cid)
    order = s.mro(cid)
    for base, dst in s.handlers:
        if base != cid and base in order:
            s.add(dst, (s.V("i", cid),))


def handler_of(s: Any, v: Value, dst: int) -> None:
    """``except E as e`` with E a class of the tree: e is also each raised subclass's instance."""
    base = v[1]
    s.handlers.append((base, dst))
    for cid in sorted(s.raised_classes):
        if cid != base and base in s.mro(cid):
            s.add(dst, (s.V("i", cid),))
