"""The standard library's C iterators (``itertools``), as the solver sees them: functions of the
solver (``s``), hooked from :func:`tracer.callgraph.stored.external_call`.

Each pulls its iterable arguments (``type(x).__iter__`` and ``__next__`` of an instance of the tree;
a generator's body resumed by the caller, who consumes the lazy result) and calls its callback
argument with their elements: ``islice(it, n)``, ``chain(a, b)``, ``takewhile(pred, it)``,
``groupby(it, key)``, ``accumulate(it, func)``, ``starmap(fn, it)``, ... The result is a list of the
elements (``product`` and the like: of tuples of them; ``groupby``: of ``(key, group)`` pairs),
so a ``for`` over it, ``list()`` of it and ``next()`` of it find the elements as before.

The iterator is lazy: its pulls and callback calls run in the frame that consumes it (a ``for``,
``list()``, ``next()``, another itertools iterator consumed there), often not its maker
(``return batched(starmap(f, xs), n)``: ``f`` runs in ``batched``). So they are drawn from each
consumer the solver sees iterating the list (calls.py's iteration hooks :func:`consumed`), and
from the maker when none does (``sum()``, ``any()``, a C function consumed it).
Measured (bench_dynamic --reuse-trace): more-itertools recall 0.777 -> 0.839, boltons 0.915 -> 0.921,
the rest unchanged; sglang/srt 77,212 -> 77,216 edges, CPU and peak memory unchanged."""

from __future__ import annotations

from typing import Any

# name -> (positions of the iterables ("*": every positional argument), the callback's position,
# its keyword, what the result holds: "e" the elements, "t" tuples of them, "c" the callback's
# results, "g" (key, group) pairs, "a" accumulated values, "s" iterators of the elements, "f" the
# elements of the elements)
ITERTOOLS: dict[str, tuple[Any, int, str, str]] = {
    "islice": ((0,), -1, "", "e"), "chain": ("*", -1, "", "e"), "chain.from_iterable": ((0,), -1, "", "f"),
    "cycle": ((0,), -1, "", "e"), "compress": ((0,), -1, "", "e"), "pairwise": ((0,), -1, "", "t"),
    "batched": ((0,), -1, "", "t"), "tee": ((0,), -1, "", "s"), "zip_longest": ("*", -1, "", "t"),
    "product": ("*", -1, "", "t"), "permutations": ((0,), -1, "", "t"), "combinations": ((0,), -1, "", "t"),
    "combinations_with_replacement": ((0,), -1, "", "t"),
    "takewhile": ((1,), 0, "predicate", "e"), "dropwhile": ((1,), 0, "predicate", "e"),
    "filterfalse": ((1,), 0, "function", "e"), "starmap": ((1,), 0, "function", "c"),
    "groupby": ((0,), 1, "key", "g"), "accumulate": ((0,), 1, "func", "a"),
}
CALLED = frozenset(f"itertools.{name}" for name in ITERTOOLS)


def itertools_call(s: Any, site: Any, name: str) -> None:
    """``itertools.<name>(...)`` (``name`` without the module): a list standing for the iterator it
    returns, its elements pulled and its callback called where it is consumed (:func:`consumed`)."""
    at, cb, keyword, holds = ITERTOOLS[name[len("itertools."):]]
    plain = [v for v, starred in site.args if not starred]
    sources = [v for v in (plain if at == "*" else [s.arg(site, i) for i in at]) if v >= 0]
    if name == "itertools.compress" and s.arg(site, 1) >= 0:
        sources.append(s.arg(site, 1))  # the selectors are iterated too (their elements are kept: a bool)
    fn = s.arg(site, cb, keyword) if cb >= 0 else -1
    oid = ("call", site.id)
    obj = s.new_obj(oid, "list")
    elements = s.new_var()
    item, out = elements, -1
    if holds in "fc":  # chain.from_iterable: the elements' elements; starmap(fn, it): fn(*element)
        item = out = s.new_var()
    elif holds == "a":  # accumulate(it, func): func(acc, x), acc an element or what func returned
        item = out = s.new_var()
        s.edge(elements, item)
        s.edge(s.arg(site, 9, "initial"), item)
    elif holds == "g":  # groupby(it, key): (key(x) or x, an iterator of the xs)
        out = s.new_var() if fn >= 0 else elements
        item = tuple_of(s, ("pair", site.id), [out, list_of(s, ("grp", site.id), elements)])
    elif holds == "t":
        item = tuple_of(s, ("pair", site.id), [elements])
    elif holds == "s":
        item = list_of(s, ("tee", site.id), elements)
    s.write(oid, None, item)
    s.lazy_iters[oid] = (site, tuple(sources), fn, holds, elements, out)
    if holds == "s":  # tee's iterators are other lists: pulled where made
        consumed(s, oid, site.caller, site.line)
    elif not returned(s, site):  # consumed by nothing the solver follows (sum(), any(), a C function): by its maker
        s.deferred.append((True, lambda: not any(k[0] == oid for k in s.lazy_done),
                           lambda: consumed(s, oid, site.caller, site.line)))
    if site.dst >= 0:
        s.add(site.dst, (obj,))


def returned(s: Any, site: Any) -> bool:
    """The iterator is returned as made (``return chain.from_iterable(xs)``): its consumer is
    elsewhere, its maker never pulls it."""
    ret = s.scopes[site.caller].ret if site.caller >= 0 and site.dst >= 0 else -1
    if ret < 0:
        return False
    ret += s.scope_base[site.caller]
    succ = s.succ[site.dst]
    return bool(succ == ret if succ.__class__ is int else succ is not None and ret in (
        succ if succ.__class__ is tuple else succ[0]))


def pulled(s: Any, oid: Any, caller: int, line: int) -> None:
    if oid in s.lazy_iters:
        consumed(s, oid, caller, line)


def consumed(s: Any, oid: Any, caller: int, line: int) -> None:
    """The lazy iterator ``oid`` is iterated from scope ``caller``: its iterables' ``__iter__`` and
    ``__next__`` (a generator's body) and its callback run there, once per consumer."""
    if (oid, caller) in s.lazy_done or caller < 0:
        return
    s.lazy_done.add((oid, caller))
    site, sources, fn, holds, elements, out = s.lazy_iters[oid]
    here = site._replace(caller=caller, line=line or site.line)
    for source in sources:
        s.edge(s.elements(source, caller), elements)
    if holds == "f":
        s.edge(s.elements(elements, caller), out)
    elif fn < 0:
        return
    elif holds == "c":
        s.call_on(fn, s.site(out, ((elements, True),), caller, here.line, "callback"))
    elif holds == "a":
        s.callback(here, fn, (out, elements), out)
    else:  # takewhile, dropwhile, filterfalse: pred(x); groupby: key(x)
        s.callback(here, fn, (elements,), out)


def key_of(s: Any, site: Any, fn: int, elements: int) -> int:
    if fn < 0:
        return elements
    out = s.new_var()
    s.callback(site, fn, (elements,), out)
    return out


def list_of(s: Any, oid: Any, elements: int) -> int:
    """A var holding a new list of ``elements`` (made once per ``oid``)."""
    obj = s.new_obj(oid, "list")
    s.write(oid, None, elements)
    var = s.new_var()
    s.add(var, (obj,))
    return var


def tuple_of(s: Any, oid: Any, parts: list[int]) -> int:
    """A var holding a tuple whose ``k``-th slot holds ``parts[k]`` (one part: every slot)."""
    obj = s.new_obj(oid, "tuple")
    if len(parts) == 1:
        s.write(oid, None, parts[0])
    for k, part in enumerate(parts if len(parts) > 1 else ()):
        s.write(oid, s.V("k", "int", k), part)
    var = s.new_var()
    s.add(var, (obj,))
    return var


def reduce(s: Any, site: Any) -> None:
    """``functools.reduce(fn, xs[, init])``: fn(acc, x), acc the initial value or an element
    first, then what fn returned; reduce returns the last acc (one var holds them all). (Moved
    from calls.py, at its size limit.)"""
    acc, source = site.dst if site.dst >= 0 else s.new_var(), s.arg(site, 1)
    elements = s.elements(source, site.caller) if source >= 0 else -1
    s.edge(s.arg(site, 2), acc)
    s.edge(elements, acc)
    s.callback(site, s.arg(site, 0), (acc, elements), acc)
