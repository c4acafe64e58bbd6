"""Sorting compares: ``sorted(xs)``, ``min(xs)``, ``max(xs)``, ``xs.sort()``, ``heapq``'s
``heappush``/``heappop``/``heapify``/``heappushpop``/``heapreplace``/``nsmallest``/``nlargest``/``merge``
and ``bisect``'s searches and inserts call ``type(x).__lt__`` on the elements (``__gt__`` of the
other operand when a class has no ``__lt__``): an ``implicit`` edge from the function calling them
(the C code that compares is no node) to the ``__lt__`` of the tree's classes whose instances the
elements hold. With ``key=`` the keys are compared, not the elements: no edge (what a key function
returns is not followed). ``min(a, b)`` of two arguments compares them. Plain functions of the
solver, hooked from stored.py (the builtins' hooks, the names outside the tree) and keys.py
(``list.sort``)."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import ALL, Value

LT = ("__lt__", "__gt__")
GT = ("__gt__", "__lt__")
HEAPQ = ("heappush", "heappop", "heapify", "heappushpop", "heapreplace", "nsmallest", "nlargest", "merge")
BISECT = ("bisect", "bisect_left", "bisect_right", "insort", "insort_left", "insort_right")
CALLED = frozenset((*(f"heapq.{f}" for f in HEAPQ), *(f"bisect.{f}" for f in BISECT)))
# heapq's arguments compared: (a heap's position or -1, an iterable's position or -1, an item's or -1)
COMPARED = {"heappush": (0, -1, 1), "heappop": (0, -1, -1), "heapify": (0, -1, -1), "heappushpop": (0, -1, 1),
            "heapreplace": (0, -1, 1), "nsmallest": (-1, 1, -1), "nlargest": (-1, 1, -1)}


def compared(s: Any, var: int, site: Any, order: tuple[str, str] = LT) -> None:
    """The values of ``var`` are compared with each other where ``site`` runs (``a < b``; max: ``a > b``)."""
    if var >= 0 and any(n in s.dunders for n in order):  # what no class defines is never found
        s.on(var, ("i", compared_value, order, site.caller, site.line))


def compared_value(s: Any, v: Value, order: tuple[str, str], caller: int, line: int) -> None:
    """Instance v compared from C: ``order[0]``; the reflected ``order[1]`` only where no class of its
    MRO defines ``order[0]`` and every base is the tree's (``int.__gt__`` of an ``IntEnum`` answers:
    the reflected ``__lt__`` never runs; helper hash found it on sglang/srt's ``max(modes)``)."""
    picked: tuple[str, ...] = order[:1] if s.lookup(v[1], order[0]) is not None or not tree_bases_only(s, v[1]) else order
    names = tuple(n for n in picked if n in s.dunders)
    if names:
        type(s).implicit_call(s, v, names, -1, (), caller, line)


def tree_bases_only(s: Any, cid: int) -> bool:
    """Every base of every class of cid's MRO is a class of the tree (or ``object``)."""
    for k in s.mro(cid):
        for var in s.class_bases[k]:
            vals = s.pts.get(var, ())
            if not vals or any(b[0] != "c" and b != ("B", "object") for b in vals):
                return False
    return True


def held(s: Any, var: int) -> int:
    """A variable of the elements of the lists ``var`` holds (a heap, a sorted list: not iterated)."""
    dst = s.new_var()
    s.on(var, ("o", lambda v: s.edge(s.slot(v[1], ALL), dst)))
    return dst


def keyed(site: Any) -> bool:
    return any(k == "key" for k, _ in site.kwargs)


def sort_builtin(s: Any, site: Any, order: tuple[str, str] = LT) -> None:
    """``sorted(xs)``, ``min(xs)`` (a hook Calls.builtin runs first); ``min(a, b)``."""
    plain = [v for v, starred in site.args if not starred]
    if keyed(site) or not plain:
        return
    if len(plain) == 1:
        compared(s, s.elements(plain[0], site.caller), site, order)
    else:
        for var in plain:
            compared(s, var, site, order)


def max_builtin(s: Any, site: Any) -> None:
    """``max(xs)``: ``x > best``, the reflected ``__lt__`` where a class has no ``__gt__``."""
    sort_builtin(s, site, GT)


def sort_method(s: Any, site: Any, oid: Any) -> None:
    """``xs.sort()`` of a list the program made."""
    if not keyed(site):
        compared(s, s.slot(oid, ALL), site)


def external_sort(s: Any, site: Any, name: str) -> None:
    """``heapq.*`` and ``bisect.*``: the heap's or the sorted list's elements, and the item."""
    module, func = name.split(".", 1)
    plain = [v for v, starred in site.args if not starred]
    if keyed(site) or not plain:
        return
    if func == "merge":  # merge(*iterables): each iterated
        for var in plain:
            compared(s, s.elements(var, site.caller), site)
        return
    heap, iterable, item = COMPARED[func] if module == "heapq" else (0, -1, 1)  # bisect.*(a, x)
    if 0 <= heap < len(plain):
        compared(s, held(s, plain[heap]), site)
    if 0 <= iterable < len(plain):
        compared(s, s.elements(plain[iterable], site.caller), site)
    if 0 <= item < len(plain):
        compared(s, plain[item], site)
