"""Names the program spells as strings: ``"pkg.mod.fn".rsplit(".", 1)`` gives the known parts,
``importlib.import_module("pkg.mod")`` of a module of the tree is that module (a plugin table of
dotted names, split and imported, then ``getattr(module, name)``); one known by its dotted start
(``f"pkg.plugins.{name}"``) is each module of the tree of that start. A name built at run time
from nothing known stays unknown. And ``types.MethodType(fn, obj)``, a function bound by hand. A mixin of
the solver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracer.callgraph.calls import Site
from tracer.callgraph.heap import Value
from tracer.callgraph.members import named_attrs
from tracer.callgraph.protocols import STR_SPLITS
from tracer.callgraph.valuesets import VarMap

MAX_PLUGINS = 64  # modules one import_module of a known start may name


class Named:
    pts: VarMap  # valuesets.VarMap: var -> its values
    external_sites: set[int]
    # provided by the solver
    add: Callable[[int, Any], None]
    new_var: Callable[[], int]
    new_obj: Callable[..., Value]
    write: Callable[[Any, Value | None, int], None]
    each: Callable[..., None]
    on: Callable[[int, Any], None]
    V: Callable[..., Value]
    in_tree: Callable[[str], str]
    module_value: Callable[[str], Value]
    mro: Callable[[int], Any]
    class_attrs: list[dict[str, int]]
    dyn_attrs: dict[int, Any]
    ns: dict[tuple[str, str], int]
    modules: set[str]
    packages: set[str]
    prefix: str
    attr_value: Callable[[Value, str, int, int, int], None]
    params_seeded: bool
    queue: list[int]
    seed_params: Callable[[], None]
    run_last_rules: Callable[[], None]

    def last_round(self) -> None:
        """Once nothing else is pending: parameters no call fills are seeded (seeds.py), then the rules
        waiting for every other one run (heap.binop's prefixes: ``"parse_" + name`` with ``name``
        still unknown after all that)."""
        if not self.params_seeded:
            self.seed_params()
        if not self.queue:
            self.run_last_rules()

    def getattr_prefix(self, k: Value, dst: int, target: int, site: Site) -> None:
        """``getattr(obj, f"parse_{name}")``: every attribute of obj's class (MRO) named so."""
        if k[0] == "k" and k[1] == "prefix":
            self.on(target, ("", type(self).prefixed_attrs, k[2], dst, site))
        elif k[0] == "n":  # a name dir(x) / vars(x) gave (members.py)
            self.on(target, ("", named_attrs, k, dst, site.caller, site.line))

    def prefixed_attrs(self, v: Value, prefix: str, dst: int, site: Site) -> None:
        if v[0] in ("i", "c"):
            names = {n for c in self.mro(v[1]) for n in (*self.class_attrs[c], *self.dyn_attrs.get(c, ()))
                     if n.startswith(prefix)}
        elif v[0] == "m":
            names = {n for (mod, n) in self.ns if mod == v[1] and n.startswith(prefix)}
        else:
            return
        for name in sorted(names):
            self.attr_value(v, name, dst, site.caller, site.line)

    def str_method(self, site: Site, name: str, recv: Value) -> None:
        if name in STR_SPLITS:
            self.split_const(site, name, recv)
        elif site.dst >= 0:  # "_process_{}".format(x).lower(): the string (or its known start) changes case
            self.add(site.dst, (self.V("k", recv[1], getattr(str, name)(recv[2])),))

    def split_const(self, site: Site, name: str, recv: Value) -> None:
        """``"pkg.mod.fn".rsplit(".", 1)``: a list of the known parts, when every argument is a constant
        (one string separator, one int count): a plugin table's dotted names, split to import them."""
        args = [tuple(self.pts.get(var, ())) for var, starred in site.args if not starred]
        if site.dst < 0 or site.kwargs or any(len(a) != 1 or a[0][0] != "k" for a in args):
            return
        try:
            parts = getattr(str, name)(recv[2], *(a[0][2] for a in args))
        except (TypeError, ValueError):
            return
        if len(parts) > 8 or not all(isinstance(p, str) for p in parts):
            return
        oid = ("split", site.id, recv[2])
        obj = self.new_obj(oid, "list" if name.endswith("split") else "tuple", len(parts))
        for i, part in enumerate(parts):
            var = self.new_var()
            self.add(var, (self.V("k", "str", part),))
            self.write(oid, self.V("k", "int", i), var)
        self.add(site.dst, (obj,))

    def named_call(self, site: Site, name: str) -> None:
        self.import_named(site) if name == "importlib.import_module" else self.method_type(site)

    def import_named(self, site: Site) -> None:
        """``import_module(name)`` with a known absolute name of a module of the tree: that module."""
        dst = site.dst
        self.external_sites.add(site.id)
        if not site.args or site.args[0][1]:
            return
        self.each(site.args[0][0], lambda k: self.add(dst, (self.module_value(k[2]),)) if self.in_tree(k[2]) else None,
                  "k")
        self.each(site.args[0][0], lambda k: self.import_prefixed(k[2], dst) if k[0] == "k" and k[1] == "prefix" else None)

    def import_prefixed(self, start: str, dst: int) -> None:
        """``import_module(f"pkg.plugins.{name}")``: every module of the tree whose name starts so (a
        dotted start only: a bare one names no package)."""
        if "." not in start:
            return
        found = [m for m in sorted({*self.modules, *self.packages}) if m.startswith(start) or
                 self.prefix and m.startswith(f"{self.prefix}.{start}")]
        self.add(dst, [self.V("m", m) for m in found[:MAX_PLUGINS]])

    def method_type(self, site: Site) -> None:
        """``types.MethodType(fn, obj)``: fn bound to obj (``md.inline.process_text = MethodType(f, md.inline)``)."""
        self.external_sites.add(site.id)
        if len(site.args) != 2 or site.args[0][1] or site.args[1][1]:
            return
        fn, obj, dst = site.args[0][0], site.args[1][0], site.dst

        def bind(_: Any) -> None:
            self.add(dst, [self.V("b", f[1], o) for f in tuple(self.pts.get(fn, ())) if f[0] == "f"
                           for o in tuple(self.pts.get(obj, ())) if o[0] in ("i", "c")])
        self.on(fn, bind)
        self.on(obj, bind)
