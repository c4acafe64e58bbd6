"""The standard library's C iterators (``itertools``), as the solver sees them: functions of the
solver (``s``), hooked from :func:`tracer.callgraph.stored.external_call`.

Each pulls its iterable arguments (``type(x).__iter__`` and ``__next__`` of an instance of the tree;
a generator's body resumed by the caller, who consumes the lazy result) and calls its callback
argument with their elements: ``islice(it, n)``, ``chain(a, b)``, ``takewhile(pred, it)``,
``groupby(it, key)``, ``accumulate(it, func)``, ``starmap(fn, it)``, ... The result is a list of the
elements (``product`` and the like: of tuples of them; ``groupby``: of ``(key, group)`` pairs),
so a ``for`` over it, ``list()`` of it and ``next()`` of it find the elements as before. The
implicit calls are drawn from the caller of the itertools function: the iterator is made and,
mostly, consumed there (``list(islice(it, n))``)."""

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
    """``itertools.<name>(...)`` (``name`` without the module): the elements pulled, the callback
    called with them, a list standing for the iterator the call returns."""
    at, cb, keyword, holds = ITERTOOLS[name[len("itertools."):]]
    plain = [v for v, starred in site.args if not starred]
    sources = plain if at == "*" else [s.arg(site, i) for i in at]
    if name == "itertools.compress" and s.arg(site, 1) >= 0:
        s.elements(s.arg(site, 1), site.caller)  # the selectors are iterated too
    elements = s.new_var()
    for source in sources:
        if source >= 0:
            s.edge(s.elements(source, site.caller), elements)
    fn = s.arg(site, cb, keyword) if cb >= 0 else -1
    oid = ("call", site.id)
    obj = s.new_obj(oid, "list")
    item = elements
    if holds == "f":  # chain.from_iterable: the elements of the elements
        item = s.elements(elements, site.caller)
    elif holds == "c":  # starmap(fn, it): fn(*element)
        item = s.new_var()
        if fn >= 0:
            s.call_on(fn, s.site(item, ((elements, True),), site.caller, site.line, "callback"))
    elif holds == "a":  # accumulate(it, func): func(acc, x), acc an element or what func returned
        item = s.new_var()
        s.edge(elements, item)
        s.edge(s.arg(site, 9, "initial"), item)
        s.callback(site, fn, (item, elements), item)
    elif holds == "g":  # groupby(it, key): (key(x) or x, an iterator of the xs)
        item = tuple_of(s, ("pair", site.id), [key_of(s, site, fn, elements), list_of(s, ("grp", site.id), elements)])
    elif holds == "t":
        item = tuple_of(s, ("pair", site.id), [elements])
    elif holds == "s":
        item = list_of(s, ("tee", site.id), elements)
    elif fn >= 0:  # takewhile, dropwhile, filterfalse: pred(x)
        s.callback(site, fn, (elements,), -1)
    s.write(oid, None, item)
    if site.dst >= 0:
        s.add(site.dst, (obj,))


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
