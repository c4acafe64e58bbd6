"""The keys of dicts and sets (plain functions of the solver, hooked from solve.py and calls.py).

* A dict or a set hashes its keys: ``d[k]``, ``d[k] = v``, ``k in d``, ``d.get(k)``,
  ``d.setdefault(k, v)``, ``d.pop(k)``, ``s.add(k)``, ``s.discard(k)``, ``s.remove(k)``, ``set(xs)``
  call ``type(k).__hash__`` (an ``implicit`` edge) when k is an instance of a class of the tree
  defining one; only where the container is a dict or a set the program made (an instance's
  ``__getitem__`` is its own call), for the instances the key holds; a tuple key hashes its
  elements. ``__eq__`` runs on a collision only: no edge. A list's ``in``, ``remove``, ``index``,
  ``count`` compare: its elements' ``__eq__`` (keyeq.py).
* The first of each ``d.items()`` pair is one of the dict's constant keys, what ``for k in d``
  binds (``getattr(obj, name)`` over a table's names). ``d.keys()`` is not followed: on markdown's
  extensions it gave 2 real edges and 4 impossible ones (every extension's ``config`` is one
  object per class, so ``getConfigs()`` came to hold every extension's callables).
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph.dictlike import MAPPED  # noqa: F401 - solve.py: `in` of a Mapping subclass
from tracer.callgraph.heap import Value
from tracer.callgraph.keyeq import PROBES, equal_sequences, hashed, probed
from tracer.callgraph.ordering import sort_method
from tracer.callgraph.stored import missing_item

HASHED_KINDS = frozenset(("dict", "set"))
KEYED_METHODS = frozenset(("get", "setdefault", "pop", "add", "discard", "remove", "index", "count", "move_to_end"))


def key_hashed(s: Any, v: Value, key: int, caller: int, line: int) -> None:
    """Container value ``v`` keyed by ``key`` where ``caller`` does so at ``line``: its __hash__ runs."""
    if v[0] == "o" and s.obj_kind.get(v[1]) in HASHED_KINDS:
        hashed(s, key, caller, line)  # a tuple's elements too, no base's __hash__ past an __eq__ (keyeq.py)


def read_in_source(s: Any, v: Value, key: int, caller: int, line: int) -> None:
    """``d[k]`` written in the source (a scope given): a defaultdict's factory runs, the key is hashed."""
    if caller >= 0:
        missing_item(s, v, caller, line)
        key_hashed(s, v, key, caller, line)


def written_item(s: Any, v: Value, key: int, src: int, caller: int, line: int) -> None:
    """``d[k] = x`` written in the source: the key is hashed, then the store."""
    key_hashed(s, v, key, caller, line)
    s.setitem_value(v, key, src, caller, line)


def contained(s: Any, ins: tuple[Any, ...], g: Any, caller: int, line: int) -> None:
    """The install of a ``dunder`` instruction: ``key in container`` hashes key in a dict or a set."""
    if "__contains__" in ins[3] and ins[4]:
        s.on(g(ins[2]), ("o", probed, g(ins[4][0]), caller, line))  # a list's: its elements' __eq__ (keyeq.py)
    elif "__eq__" in ins[3] and ins[4] and "__eq__" in s.dunders:  # a == b of lists: the elements' (keyeq.py)
        s.on(g(ins[2]), ("o", equal_sequences, g(ins[4][0]), caller, line))


def container_method(s: Any, site: Any, name: str, recv: Value) -> None:
    """``d.get(k)``, ``s.add(k)``: the key hashed; ``d.items()``: the constant keys first; ``xs.sort()``."""
    if name in KEYED_METHODS and site.args and not site.args[0][1]:
        (probed if name in PROBES else key_hashed)(s, recv, site.args[0][0], site.caller, site.line)
    elif name == "sort":  # xs.sort(): the elements compared (ordering.py)
        sort_method(s, site, recv[1])
    # d.items(): calls.py makes each pair's first the dict's keys


def next_item(s: Any, v: Value, dst: int) -> None:
    """``next(it)`` where it is a container the solver made (``iter(x)`` of one is itself): a dict
    yields its keys (a value taken for one drew its ``__str__``: helper hash found it on sglang/srt's
    ``next(iter(self._registry), None)``), the others their elements."""
    if s.obj_kind.get(v[1]) == "dict":
        s.edge(s.dict_keys(v[1]), dst)
    else:
        s.read(v[1], None, dst)
