"""Watchers of the instructions the solver installs, as plain data: a watcher ``(tag, f, *args)``
runs ``f(solver, value, *args)`` for each value of kind ``tag`` ("" any) a variable gets
(:meth:`tracer.callgraph.solve.Solver.on`). A closure per instruction (a function and a cell
per captured name, ~250 bytes) was ~35 MB of ``graph --all`` on sglang/srt; a tuple is ~90."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Value
from tracer.callgraph.raised import raised_value


def merge_into(s: Any, v: Value, dst: Any) -> None:
    """``{**v}``, ``[*v]``, ``a + b``'s containers: every slot of ``v`` into ``dst``."""
    s.merge_obj(dst, v[1])


def unpack_into(s: Any, v: Value, index_key: Value | None, dst: int) -> None:
    s.read(v[1], index_key, dst)


def super_of(s: Any, v: Value, cid: int, dst: int) -> None:
    """``super()`` in a method of class ``cid``: one value per instance or class ``self`` holds."""
    if v[0] in "ic":
        s.add(dst, [s.V("s", cid, v)])


def iter_into(s: Any, v: Value, dst: int, caller: int, line: int, names: tuple[str, str]) -> None:
    s.iter_value(v, dst, caller, line, names)


def construct_raised(s: Any, v: Value, site: Any) -> None:
    s.construct(site, v[1])


def raised(s: Any, v: Value, _: None) -> None:
    raised_value(s, v)


def read_key(s: Any, k: Value, oid: Any, dst: int) -> None:
    """``obj[key]`` of a container ``oid``: the slot of each constant or attribute name (members.py)
    the key holds (any slot else), as ``Calls.keyed``."""
    s.read(oid, k if k[0] in "kn" else None, dst)


def read_slots(s: Any, oid: Any, key: int, dst: int) -> None:
    """``Calls.keyed``'s rule as data: the slot of each constant ``key`` holds, every slot for
    anything else and when it stays empty (a key of -1: any slot now)."""
    if key < 0:
        s.read(oid, None, dst)
        return
    s.on(key, ("", read_key, oid, dst))
    s.when_empty(key, (read_any, oid, dst))


def read_any(s: Any, oid: Any, dst: int) -> None:
    s.read(oid, None, dst)


def call_args(s: Any, g: Any, args: Any) -> tuple[tuple[int, bool], ...]:
    """A call site's ``((var, starred), ...)`` in the solver's numbers, each pair and each tuple
    one object for every site passing the same (sglang/srt: 234,000 pairs, 158,000 distinct;
    200,000 tuples, 117,000 distinct), while modules are installed (``s.interned``: None after)."""
    memo = s.interned
    if memo is None:
        return tuple((g(a), st) for a, st in args)
    out = tuple(memo.setdefault(p, p) for p in [(g(a), st) for a, st in args])
    return memo.setdefault(out, out) if out else out
