"""Attribute names the program reads off its own values: ``dir(x)``, ``vars(x)``, ``x.__dict__``,
``inspect.getmembers(x)`` yield the names of x's attributes; ``getattr(x, name)`` with such a name
reads those attributes (PLY's ``[(k, getattr(module, k)) for k in dir(module)]``, a plugin loader's
``for name in dir(mod)``); ``sys.modules["pkg.mod"]`` is that module. Plain functions of the solver,
hooked from stored.py (builtins), attrs.py, named.py (getattr), calls.py (``dict(pairs)``) and heap.py.

A name of this kind is the value ``("n", base, prefix)``: "the name of an attribute of ``base``
starting with ``prefix``" (``base`` an instance, a class or a module of the tree). A test
``name.startswith("p_")`` / ``name[:2] == "p_"`` narrows the prefix (prefixes.py). A dict built
from such pairs (``dict((k, getattr(x, k)) ...)``, ``{k: v ...}``) keeps them under the name's
slot; read with a known name (``d["p_expr"]``) or a name of known start, that slot gives the
functions and classes *defined* under a name that fits: the only values the key's name can
select, since the pair's two halves meet in one slot (``d[k]`` of any other value, a constant or
an instance, stays unread rather than guessed)."""

from __future__ import annotations

from typing import Any

Value = tuple[Any, ...]
BASES = ("i", "c", "m")
DEFINED = ("f", "b", "sm", "cm", "c")  # values that carry the name they were defined under
GETMEMBERS = "inspect.getmembers"
SYS_MODULES = "sys.modules"


def attr_names(s: Any, base: Value, prefix: str = "") -> list[str]:
    """The attribute names ``dir(base)`` shows that the tree defines (class attributes through the
    MRO, names set on the class; a module's namespace), starting with ``prefix``."""
    if base[0] in ("i", "c"):
        names = dict.fromkeys(n for c in s.mro(base[1]) for n in (*s.class_attrs[c], *s.dyn_attrs.get(c, ())))
    elif base[0] == "m":
        cache = s.__dict__.setdefault("module_names", {})  # module -> (len(ns), the names it binds)
        found = cache.get(base[1])
        if found is None or found[0] != len(s.ns):  # a setattr on a module binds one more
            found = cache[base[1]] = (len(s.ns), [n for (mod, n) in s.ns if mod == base[1]])
        found = found[1]
        names = dict.fromkeys(found)
    else:
        return []
    return [n for n in names if n.startswith(prefix)]


def name_value(s: Any, base: Value) -> Value:
    return s.V("n", base, "")


def dir_builtin(s: Any, site: Any) -> None:
    names_builtin(s, site, "dir")


def vars_builtin(s: Any, site: Any) -> None:
    names_builtin(s, site, "vars")


def names_builtin(s: Any, site: Any, name: str) -> None:
    """``dir(x)``: a list of x's attribute names; ``vars(x)``: a dict of them (``x.__dict__``)."""
    target = s.arg(site, 0)
    if target < 0 or site.dst < 0:
        return
    oid = ("names", site.id)
    if name == "dir":
        obj = s.new_obj(oid, "list")
        names = s.new_var()
        s.write(oid, None, names)
        s.on(target, lambda vals: s.add(names, [name_value(s, v) for v in vals if v[0] in BASES]))
    else:
        obj = s.new_obj(oid, "dict")
        s.each(target, lambda v: namespace_of(s, oid, v, site))
    s.add(site.dst, (obj,))


def namespace_of(s: Any, oid: Any, v: Value, site: Any) -> None:
    """The dict ``vars(v)`` of a class or a module: each name of v under the name's slot, with its
    value (an instance's holds its fields, not its class's names: not read)."""
    if v[0] not in ("c", "m"):
        return
    values = s.new_var()
    named_attrs(s, v, name_value(s, v), values, site.caller, site.line)
    s.write(oid, name_value(s, v), values)


def dunder_dict(s: Any, v: Value, dst: int, caller: int, line: int) -> None:
    """``x.__dict__`` of a class or a module of the tree (an instance's holds its fields: not read)."""
    if v[0] in ("c", "m"):
        oid = ("__dict__", v)
        s.add(dst, (s.new_obj(oid, "dict"),))
        if oid not in s.named_slots:
            values = s.new_var()
            named_attrs(s, v, name_value(s, v), values, caller, line)
            s.write(oid, name_value(s, v), values)


def getmembers(s: Any, site: Any) -> None:
    """``inspect.getmembers(x)``: a list of (name, value) pairs of x's attributes."""
    target = s.arg(site, 0)
    s.external_sites.add(site.id)
    if target < 0 or site.dst < 0:
        return
    oid, pair = ("members", site.id), ("member", site.id)
    obj, tup = s.new_obj(oid, "list"), s.new_obj(pair, "tuple", 2)
    names, values = s.new_var(), s.new_var()
    s.write(pair, s.V("k", "int", 0), names)
    s.write(pair, s.V("k", "int", 1), values)
    holder = s.new_var()
    s.add(holder, (tup,))
    s.write(oid, None, holder)

    def each(v: Value) -> None:
        if v[0] in BASES:
            s.add(names, (name_value(s, v),))
            named_attrs(s, v, name_value(s, v), values, site.caller, site.line)
    s.each(target, each)
    s.add(site.dst, (obj,))


def always() -> bool:
    return True


def named_attrs(s: Any, v: Value, k: Value, dst: int, caller: int, line: int) -> None:
    """``getattr(v, k)`` for a name ``k`` of kind "n": every attribute of v that base of k has, of
    k's prefix (again each round: a name set on a class later is one more)."""
    key, done_reads = (v, k, dst), s.__dict__.setdefault("named_reads", set())  # (value, name, dst) read
    if key in done_reads or v[0] not in BASES:
        return
    done_reads.add(key)
    done: set[str] = set()

    def read() -> None:
        for name in attr_names(s, k[1], k[2]):
            if name not in done:
                done.add(name)
                s.attr_value(v, name, dst, caller, line)
        s.deferred.append((True, always, read))  # checked again each round (a rule false once is dropped)
    read()


# -- containers keyed by names --------------------------------------------------------------------
def fits(key: Value, prefix: str) -> str | None:
    """What a read with ``key`` selects of a slot of names starting with ``prefix``: ("=", name) an
    exact name, a longer prefix, or None when they cannot meet."""
    if key[0] == "k" and key[1] == "str":
        return "=" + key[2] if key[2].startswith(prefix) else None
    if key[0] == "n" or key[0] == "k" and key[1] == "prefix":
        q = key[2]
        return q if q.startswith(prefix) else prefix if prefix.startswith(q) else None
    return None


def defined_name(s: Any, v: Value) -> str:
    if v[0] == "c":
        return s.class_names[v[1]].rsplit(".", 1)[-1]
    return s.scopes[v[1]].name.rsplit(".", 1)[-1]


def connect(s: Any, src: int, key: Value, prefix: str, dst: int) -> None:
    """What of the slot ``src`` (names starting with ``prefix``) a read with ``key`` selects, into ``dst``."""
    want = fits(key, prefix)
    if want is None:
        return
    exact = want[1:] if want.startswith("=") else None

    def selected(vals: Any) -> None:
        s.add(dst, [v for v in vals if v[0] in DEFINED and (
            defined_name(s, v) == exact if exact is not None else defined_name(s, v).startswith(want))])
    s.on(src, selected)


def slot_made(s: Any, oid: Any, key: Value, var: int) -> None:
    """A container's new slot ``key``: a slot of names (kind "n") gives each slot of a name or a
    name's start what fits it (a read ``d["p_expr"]`` is the slot of that key), both ways, before
    and after."""
    if oid == SYS_MODULES:
        sys_slot(s, key, var)
        return
    named = s.named_slots.setdefault(oid, [])
    if key[0] == "n":
        for other in s.obj_keys.get(oid, ()):
            if other != key and (other[0] == "n" or other[0] == "k" and other[1] in ("str", "prefix")):
                connect(s, var, other, key[2], s.slots[(oid, other)])
        for other, src in named:
            connect(s, src, key, other[2], var)
        named.append((key, var))
    elif key[0] == "k" and key[1] in ("str", "prefix"):
        for other, src in named:
            connect(s, src, key, other[2], var)


def dict_of_pairs(s: Any, oid: Any, v: Value) -> None:
    """``dict(pairs)``: each pair's first element keys its second (a dict source is copied)."""
    if s.obj_kind.get(v[1]) == "dict":
        s.merge_obj(oid, v[1])
        return
    pair = s.new_var()
    s.read(v[1], None, pair)

    def each_pair(p: Value) -> None:
        if p[0] != "o":
            return
        value = s.new_var()
        s.read(p[1], s.V("k", "int", 1), value)
        key = s.new_var()
        s.read(p[1], s.V("k", "int", 0), key)
        s.each(key, lambda k: s.write(oid, k if k[0] in ("k", "n") else None, value))
        s.when_empty(key, lambda: s.write(oid, None, value))
    s.each(pair, each_pair)


def sys_modules(s: Any, dst: int) -> None:
    """``sys.modules``: a dict whose item of a module of the tree is that module (``sys.modules["pkg.tab"]``:
    PLY's tables, imported by ``exec`` and read back so); heap.slot fills each key read (sys_slot)."""
    s.named_slots.setdefault(SYS_MODULES, [])
    s.add(dst, (s.new_obj(SYS_MODULES, "dict"),))


def sys_slot(s: Any, key: Value, var: int) -> None:
    if key[0] == "k" and key[1] == "str" and s.in_tree(key[2]):
        s.add(var, (s.V("m", s.in_tree(key[2])),))
