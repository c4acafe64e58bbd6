"""Callables a container or the standard library keeps and calls later (a mixin-free helper of
the solver: plain functions of it, hooked from calls.py, attrs.py and solve.py).

* ``collections.defaultdict(factory)``: reading a missing key calls ``factory()`` where the item is
  read (``d[k]`` in the source; ``d.get(k)`` does not); what it returns is an item of the dict.
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Value

DEFAULTDICT = "collections.defaultdict"


def defaultdict_made(s: Any, site: Any) -> None:
    """``collections.defaultdict(factory, ...)``: a dict whose missing items ``factory`` makes."""
    oid = ("call", site.id)
    obj = s.new_obj(oid, "dict")
    factory = s.arg(site, 0)
    if factory >= 0:
        s.default_factories[oid] = factory
    source = s.arg(site, 1)
    if source >= 0:  # defaultdict(list, {...}): the mapping's items are its items
        s.each(source, lambda v: s.merge_obj(oid, v[1]), "o")
    for key, var in site.kwargs:
        if key is not None:
            s.write(oid, s.V("k", "str", key), var)
    if site.dst >= 0:
        s.add(site.dst, (obj,))


def missing_item(s: Any, v: Value, caller: int, line: int) -> None:
    """``d[k]`` on a defaultdict, read where ``caller`` reads it: the factory runs there (once per
    reading site), its result stored under every key."""
    key = (v[1], caller, line)
    if key in s.factory_sites:
        return
    s.factory_sites.add(key)
    made = s.new_var()
    s.write(v[1], None, made)
    s.call_on(s.default_factories[v[1]], s.site(made, (), caller, line, "callback"))
