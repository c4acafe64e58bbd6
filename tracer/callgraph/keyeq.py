"""Hashing a key (plain functions of the solver, hooked from keys.py and stored.py).

* ``hash(k)`` and a dict's or a set's key call ``type(k).__hash__`` (an ``implicit`` edge) for
  the instances of the tree's classes ``k`` holds; a tuple hashes each of its elements
  (``hash((self.origin, tuple(self.expansion)))``: lark's ``Rule.__init__`` calling
  ``Symbol.__hash__``), and so does a tuple used as a key (``self.rules_cache[(a, b, target)]``).
  Only tuples are followed (a literal, ``tuple(xs)``): a frozenset's hash combines the hashes it
  keeps (no call), a list, a dict, a set are unhashable.
* A class defining ``__eq__`` without ``__hash__`` has ``__hash__ = None``: its instances are
  unhashable, no edge to a base's ``__hash__`` (the MRO's first class naming either decides).
* ``__eq__`` runs on a collision only, which a key's class alone cannot tell apart from the
  lookup of the very object stored (the identity test answers first): no edge.
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import ALL, Value

HASHING_KINDS = frozenset(("dict", "set"))  # what hashes its keys (a frozenset is kind "set" too)
MAX_DEPTH = 4  # tuples within tuples followed
PROBES = frozenset(("remove", "index", "count"))  # a list's methods comparing their argument with the elements


def unhashable(s: Any, cid: int) -> bool:
    """Whether the instances of ``cid`` have ``__hash__ = None``: the first class of its MRO
    naming ``__hash__`` or ``__eq__`` names ``__eq__`` only."""
    for k in s.mro(cid):
        attrs = s.class_attrs[k]
        if "__hash__" in attrs:
            return False
        if "__eq__" in attrs:
            return True
    return False


def hashed(s: Any, var: int, caller: int, line: int, depth: int = 0) -> None:
    """The values of ``var`` are hashed where ``caller`` runs, at ``line``."""
    if var < 0 or caller < 0 or "__hash__" not in s.dunders:
        return
    done = s.__dict__.setdefault("hashed_vars", set())  # (var, scope, line): one watcher a site
    if (var, caller, line) in done:
        return
    done.add((var, caller, line))
    s.on(var, ("i", hashed_instance, caller, line))
    if depth < MAX_DEPTH:
        s.on(var, ("o", hashed_tuple, caller, line, depth))


def hashed_instance(s: Any, v: Value, caller: int, line: int) -> None:
    if not unhashable(s, v[1]):
        type(s).implicit_call(s, v, ("__hash__",), -1, (), caller, line)


def hashed_tuple(s: Any, v: Value, caller: int, line: int, depth: int) -> None:
    """A tuple hashed: each element is (``tuple.__hash__`` calls ``hash`` on each)."""
    if s.obj_kind.get(v[1]) == "tuple":
        hashed(s, s.slot(v[1], ALL), caller, line, depth + 1)


def hash_builtin(s: Any, site: Any) -> None:
    """``hash(x)`` (a hook Calls.builtin runs first)."""
    plain = [v for v, starred in site.args if not starred]
    if plain:
        hashed(s, plain[0], site.caller, site.line)


def probed(s: Any, v: Value, key: int, caller: int, line: int) -> None:
    """``key in v``, ``v.remove(key)``: a dict or a set hashes key; a list or a tuple compares each
    element with it (``element == key`` after the identity test: the element's ``__eq__``)."""
    kind = s.obj_kind.get(v[1])
    if kind in HASHING_KINDS:
        hashed(s, key, caller, line)
    elif kind in ("list", "tuple") and caller >= 0 and "__eq__" in s.dunders:
        compared(s, v[1], caller, line)


def compared(s: Any, oid: Any, caller: int, line: int) -> None:
    """The elements of list ``oid`` compared: their ``__eq__``, the edge only (what is compared not
    passed: lark's trees comparing their children, every list's elements into every ``__eq__``'s
    ``other``, took its graph from 53 to 914 MB)."""
    done = s.__dict__.setdefault("compared_sites", set())
    if (oid, caller, line) not in done:
        done.add((oid, caller, line))
        s.on(s.slot(oid, ALL), ("i", type(s).implicit_call, ("__eq__",), -1, (), caller, line))


def equal_sequences(s: Any, v: Value, other: int, caller: int, line: int) -> None:
    """``a == b`` (``!=``) where a is a list or a tuple: ``list.__eq__`` compares element by element
    (once the lengths agree), the left one's ``__eq__`` with the right one's elements."""
    if s.obj_kind.get(v[1]) in ("list", "tuple") and caller >= 0:
        s.on(other, ("o", right_sequence, v[1], caller, line))


def right_sequence(s: Any, w: Value, oid: Any, caller: int, line: int) -> None:
    if s.obj_kind.get(w[1]) in ("list", "tuple"):
        compared(s, oid, caller, line)
