"""Dict-like classes and the length hint (plain functions of the solver, hooked from attrs.py,
calls.py and stored.py).

* A subclass of ``collections.abc.Mapping`` / ``MutableMapping`` (``typing``'s too) or of
  ``collections.UserDict`` inherits methods written in Python that call the abstract ones:
  ``m.get(k)`` runs ``m[k]`` (``type(m).__getitem__``), ``m.pop(k)`` ``m[k]`` and ``del m[k]``,
  ``m.setdefault(k, v)`` ``m[k]`` then ``m[k] = v``, ``m.update(x)`` ``m[k] = v``, ``m.popitem()``
  ``iter(m)``, ``m[k]``, ``del m[k]``, ``m.clear()`` ``m.popitem()`` (the class's, else the mixin's). Where the tree's MRO of the class finds
  no such method (the read holds nothing at the fixpoint), the read is ``("mx", name, instance)``
  and calling it draws ``implicit`` edges to the tree's methods its MRO finds (the ones
  ``UserDict`` defines itself are outside: no edge). A ``dict`` subclass's methods are C: they
  call no override. ``k in m``: ``Mapping.__contains__`` runs ``m[k]``; ``UserDict``'s reads
  ``self.data`` and a dict's is C: not ``__iter__`` (the fallback Python takes only where no class
  defines ``__contains__``).
* ``list(x)``, ``tuple(x)``, ``sorted(x)`` and ``operator.length_hint(x)`` ask the length of x
  (``PyObject_LengthHint``): ``type(x).__len__``, else ``__length_hint__`` (h11's
  ``list(self) == list(other)`` calling ``Headers.__len__``).
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph import ordering
from tracer.callgraph.heap import Value

MAPPING_BASES = frozenset(f"{m}.{n}" for m in ("collections.abc", "typing", "collections")
                          for n in ("Mapping", "MutableMapping"))
USERDICT = frozenset(("collections.UserDict", "UserDict"))
# the mixin methods of MutableMapping: what each calls, as (method, the call's arguments by position
# in the site's, whether the result is the site's)
GET, SET, DEL, ITER = ("__getitem__", (0,), True), ("__setitem__", (0, 1), False), ("__delitem__", (0,), False), \
    ("__iter__", (), False)
MIXINS: dict[str, tuple[tuple[str, tuple[int, ...], bool], ...]] = {
    "get": (GET,), "pop": (GET, DEL), "setdefault": (GET, SET), "update": (("__setitem__", (), False),),
    "popitem": (ITER, ("__getitem__", (), False), ("__delitem__", (), False)),
    "clear": (("popitem", (), False),)}  # the class's popitem, else the mixin's (as popitem)
LENGTH = ("__len__", "__length_hint__")
CALLED = frozenset(("operator.length_hint",))
KEPT = frozenset(("collections.abc", *MAPPING_BASES, "collections.UserDict"))  # bases kept by name (stored.py)
MAPPED = frozenset(("__contains__",))  # kept where only a Mapping subclass defines what `in` runs


def implicit_call(s: Any, v: Value, names: tuple[str, ...], dst: int, args: tuple[int, ...], caller: int,
                  line: int) -> None:
    """An implicit call's site, made only when an instance arrives (most operands are none): a method
    of calls.Calls (moved here from calls.py, at its line budget)."""
    s.dunder_value(v, names, s.site(dst, tuple((a, False) for a in args), caller, line, "implicit"))


def mapping_kind(s: Any, cid: int) -> str:
    """"mapping" (a Mapping's mixins), "userdict", "dict" (C methods) or "" for class ``cid``."""
    for k in s.mro(cid):
        for var in s.class_bases[k]:
            for b in tuple(s.pts.get(var, ())):
                if b[0] == "x" and b[1] in USERDICT:
                    return "userdict"
                if b[0] == "x" and b[1] in MAPPING_BASES:
                    return "mapping"
                if b == ("B", "dict") or b[0] == "x" and b[1] in ("collections.OrderedDict", "collections.defaultdict"):
                    return "dict"
    return ""


def mixin_attr(s: Any, v: Value, name: str, var: int) -> None:
    """``m.get`` read on instance ``v`` (attrs.shared_attr): the mixin, if nothing else is found."""
    if name in MIXINS and mapping_kind(s, v[1]) in ("mapping", "userdict"):  # no rule for most reads
        s.when_empty(var, (mixin_found, v, name, var), late=True)


def mixin_found(s: Any, v: Value, name: str, var: int) -> None:
    if mapping_kind(s, v[1]) in ("mapping", "userdict") and s.lookup(v[1], name) is None:
        s.add(var, (s.V("mx", name, v),))


def mixin_call(s: Any, site: Any, v: Value) -> None:
    """``m.pop(k)`` of a mixin ``("mx", "pop", m)``: the abstract methods it runs."""
    plain = [a for a, starred in site.args if not starred]
    name = v[1] if v[1] != "clear" or s.lookup(v[2][1], "popitem") is not None else "popitem"
    for method, positions, result in MIXINS[name]:
        if all(p < len(plain) for p in positions):
            args = tuple(plain[p] for p in positions)
            type(s).implicit_call(s, v[2], (method,), site.dst if result else -1, args, site.caller, site.line)


def contains_names(s: Any, cid: int, names: tuple[str, ...]) -> tuple[str, ...]:
    """What ``k in m`` runs on an instance of ``cid`` (``names``: ``__contains__``, ``__iter__``)."""
    if names[0] != "__contains__" or s.lookup(cid, "__contains__") is not None:
        return names
    kind = mapping_kind(s, cid)
    return ("__getitem__",) if kind == "mapping" else names[:1] if kind else names  # C: no edge


def length_hinted(s: Any, site: Any) -> None:
    """``list(x)``, ``tuple(x)``, ``operator.length_hint(x)``: x's ``__len__`` or ``__length_hint__``."""
    plain = [v for v, starred in site.args if not starred]
    if plain and any(n in s.dunders for n in LENGTH):
        s.on(plain[0], ("i", type(s).implicit_call, LENGTH, -1, (), site.caller, site.line))


def sorted_builtin(s: Any, site: Any) -> None:
    ordering.sort_builtin(s, site)
    length_hinted(s, site)


def tuple_builtin(s: Any, site: Any) -> None:
    """``tuple(xs)``: the object Calls.builtin then makes is a tuple (hashing it hashes its
    elements, keyeq.py; a list-kind one may be any list: on lark, following every list hashed was
    twice the memory for 9 edges more)."""
    s.obj_kind.setdefault(("call", site.id), "tuple")
    length_hinted(s, site)


BUILTIN_HOOKS = {"list": length_hinted, "tuple": tuple_builtin, "sorted": sorted_builtin}

