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

from tracer.callgraph.heap import ALL

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
    lt = tuple(n for n in order if n in s.dunders)  # what no class defines is never found
    if var >= 0 and lt:
        s.on(var, ("i", type(s).implicit_call, lt, -1, (), site.caller, site.line))


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
