"""Calls: binding arguments to parameters (positional, keyword, ``*args``, ``**kwargs``, defaults),
constructors through the MRO, bound methods, parameters returned unchanged (per call site), the
builtins that move values or call what they are given (``getattr``, ``dict``, ``sorted(key=)``,
``map``, ...). A mixin of the solver."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from tracer.callgraph import citers, dictlike, keys, members, stored, typing_only
from tracer.callgraph.abstract import unmade
from tracer.callgraph.generators import iter_builtin, resumed, spread_by_position
from tracer.callgraph.heap import ALL, NAMED, UNK, Value
from tracer.callgraph.hooks import setattr_unknown
from tracer.callgraph.ir import ScopeIR
from tracer.callgraph.narrow import Narrow
from tracer.callgraph.objects import instance_value
from tracer.callgraph.protocols import ARG_DUNDERS, ITER
from tracer.callgraph.valuesets import first_call

PROGRAM_CALLABLE = {"f", "b", "c", "i", "sm", "cm", "bm", "pa"}
DECORATOR_BUILTINS = {"staticmethod", "classmethod", "property"}
ELEMENT_BUILTINS = {"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"}
KEY_CALLBACK = {"sorted", "min", "max"}


class Site(NamedTuple):
    id: int
    dst: int
    args: tuple[tuple[int, bool], ...]
    kwargs: tuple[tuple[str | None, int], ...]
    caller: int  # scope uid
    line: int
    kind: str
    shape: str


class Calls(Narrow):
    scopes: list[ScopeIR]
    scope_base: list[int]
    scope_module: list[str]
    edges: dict[tuple[int, int], str]
    assumed_edges: dict[tuple[int, int], str]
    assumed_sites: dict[int, str]
    bound_sites: set[int]
    external_sites: set[int]
    instantiated: set[int]
    deferred: list[tuple[bool, Any, Any]]
    ns: dict[tuple[str, str], int]
    self_vars: dict[int, int]
    # methods a call of an instance runs when its class has no __call__ in the tree (the packs'
    # `[flow] module_call`: torch's nn.Module.__call__ runs forward), the scan's rule too
    module_calls: tuple[str, ...] = ()
    factories: dict[str, Any]  # a registry factory's name -> its rule (seeds.Seeds.init_registries)
    receiver_scope: Callable[[int, Value | None, Site], int]  # clones.Clones
    split_args: Callable[[Site, int, Value | None], bool]  # argclones.ArgClones
    str_method: Callable[[Site, str, Value], None]  # named.Named
    named_call: Callable[[Site, str], None]  # named.Named

    def init_calls(self) -> None:
        self.memo: dict[int, Any] = {}  # site id -> the values it called (valuesets.first_call)
        self.next_site = 1 << 40  # synthetic sites (implicit calls, callbacks) number from here
        self.elements_cache: dict[tuple[int, int], int] = {}
        self.partials: dict[int, Site] = {}  # site of functools.partial(...) -> it (its ("pa", site) value)
        self.partial_calls: set[tuple[int, int, int, int]] = set()
        self.dynamic_fields: set[int] = set()  # classes whose instances get attributes of unknown names
        stored.init_stored(self)

    def site(self, dst: int, args: tuple[tuple[int, bool], ...], caller: int, line: int, kind: str,
             kwargs: tuple[tuple[str | None, int], ...] = ()) -> Site:
        self.next_site += 1
        return Site(self.next_site, dst, args, kwargs, caller, line, kind, "")

    def add_edge(self, site: Site, callee: int, kind: str | None = None) -> None:
        key = (site.caller, callee)
        kind = kind or site.kind
        old = self.edges.get(key)
        if old is None or (old == "call" and kind != "call"):
            self.edges[key] = kind
        why = self.assumed_sites.get(site.id)  # made through a seeded receiver: no value proves it
        if old is None and why:
            self.assumed_edges[key] = why
        elif why is None and self.assumed_edges:
            self.assumed_edges.pop(key, None)  # a value proves it too
        self.bound_sites.add(site.id)

    def call_on(self, fn: int, site: Site) -> None:
        self.on(fn, ("", Calls.call_one, site))

    def call_one(self, v: Value, site: Site) -> None:
        if first_call(self.memo, site.id, v):
            self.call_value(site, v)

    def call_values(self, site: Site, vals: Iterable[Value]) -> None:
        for v in vals:
            if first_call(self.memo, site.id, v):
                self.call_value(site, v)

    def call_value(self, site: Site, v: Value) -> None:
        t = v[0]
        if t == "f" and site.kind == "call" and site.shape == "self-attribute":
            self.invoke(site._replace(kind="callback"), v[1], None)  # a plain function kept on the instance
        elif t == "f" or t == "sm":
            self.invoke(site, v[1], None)
        elif t == "b":
            self.invoke(site, v[1], v[2])
        elif t == "c":
            self.construct(site, v[1])
        elif t == "i":
            inst = v
            self.subscribe(v[1], "__call__", lambda owner, var: self.on(var, lambda vals: self.call_values(
                site, self.bound_values(vals, inst, v[1], True, None))))
            for name in self.module_calls:
                self.subscribe(v[1], name, (Calls.module_call_found, site, inst))
        elif t == "B":
            self.builtin(site, v[1]) if v[1] != "iter" else iter_builtin(self, site)
            self.external_sites.add(site.id)
        elif t == "mx":  # a Mapping's mixin method on an instance: the abstract methods it calls (dictlike.py)
            dictlike.mixin_call(self, site, v)
        elif t == "bm":
            self.builtin_method(site, v[1], v[2])
            self.external_sites.add(site.id)
        elif t == "pa":  # functools.partial(fn, *args, **kwargs)(...): fn with both argument lists
            key = (v[1], site.caller, site.line, site.dst)  # one call per site: a partial of itself ends
            if key not in self.partial_calls:
                self.partial_calls.add(key)
                made = self.partials[v[1]]
                # the edge only where the site wraps many functions (toolz's curry: all of them; every
                # argument into every one of them and their results back made every value reach everything)
                stored.partial_call(self, made, site)
        elif t == "x" and v[1] == "functools.partial" and site.args and not site.args[0][1]:
            self.partials[site.id] = site
            self.add(site.dst, (self.V("pa", site.id),))
            self.external_sites.add(site.id)
        elif t == "x" and v[1] in ("importlib.import_module", "types.MethodType") and len(site.args) <= 2 and site.dst >= 0:
            self.named_call(site, v[1])
        elif t == "x" and v[1] in stored.CALLED_EXTERNAL:  # defaultdict(f), typing.cast(T, v), ...
            self.external_sites.add(site.id)
            stored.external_call(self, site, v)
        elif t == "x" and v[1] == "functools.reduce" and site.args and not any(st for _, st in site.args):
            self.external_sites.add(site.id)
            stored.reduce_once(self, site)
        elif t == "x":
            self.external_sites.add(site.id)
            # what code outside the tree returns is not followed: tensors and configs are most values
        elif t in ("k", "o", "m"):
            self.external_sites.add(site.id)

    def module_call_found(self, owner: int, var: int, site: Site, inst: Value) -> None:
        """A called instance's class has the pack's module-call method: it runs, unless the
        tree gives the class its own __call__ (then that runs, and may call it itself)."""
        if self.lookup(inst[1], "__call__") is not None:
            return
        implicit = site._replace(kind="implicit", dst=-1 if site.dst < 0 else site.dst)
        self.on(var, lambda vals: self.call_values(implicit, self.bound_values(vals, inst, inst[1], True, None)))

    def method_caller(self, site: Site, recv: Value) -> Any:
        """A subscriber calling the class attribute it is given as a method of ``recv``."""
        def call(owner: int, var: int) -> None:
            self.on(var, lambda vals: self.call_values(site, self.bound_values(vals, recv, recv[1], True, None)))
        return call

    def construct(self, site: Site, cid: int) -> None:
        if unmade(self, site, cid):  # an ABC with abstract members left, a Protocol: TypeError (abstract.py)
            return
        inst = instance_value(self, site, cid)  # ("i", cid), or an object of its allocation site (objects.py)
        self.instantiated.add(cid)
        if site.dst >= 0:
            self.add(site.dst, (inst,))
        init = site._replace(dst=-1, kind="constructor" if site.kind in ("call", "callback") else site.kind)
        self.subscribe(cid, "__init__", lambda owner, var: self.on(var, lambda vals: self.call_values(
            init, self.bound_values(vals, inst, cid, True, None))))
        # __new__ (a static method by rule) gets the class first
        self.subscribe(cid, "__new__", lambda owner, var: self.each(var, lambda f: self.invoke(
            init._replace(kind="implicit"), f[1], self.V("c", cid)) if f[0] in ("f", "sm") else None))
        # a synthesized __init__ (dataclass, attrs) calls the post-init hook: a class whose MRO has
        # no __init__ of the tree's but a hook of that name
        for hook in ("__post_init__", "__attrs_post_init__"):
            if self.lookup(cid, hook) is not None:
                self.deferred.append((True, lambda: self.lookup(cid, "__init__") is None, (
                    Calls.post_init, cid, hook, init._replace(kind="implicit"), inst)))

    def post_init(self, cid: int, hook: str, site: Site, inst: Value) -> None:
        self.subscribe(cid, hook, self.method_caller(site, inst))

    implicit_call = dictlike.implicit_call  # an implicit call's site (moved to dictlike.py: the line budget)

    def dunder_value(self, v: Value, names: tuple[str, ...], site: Site) -> None:
        """The implicit call of an operator, protocol or builtin: the first of ``names`` the MRO of
        the instance's class holds (the others are fallbacks Python tries when it is missing)."""
        cid = v[1]
        names = dictlike.contains_names(self, cid, names)  # a Mapping's `in` runs __getitem__ (dictlike.py)
        name = next((n for n in names if self.lookup(cid, n) is not None), names[0])
        self.subscribe(cid, name, self.method_caller(site, v))

    def invoke(self, site: Site, uid: int, recv: Value | None) -> None:
        uid = self.receiver_scope(uid, recv, site)  # the edge; the scope: a copy for this receiver (clones.py)
        if self.split_args(site, uid, recv):  # bound per value of an argument a small reader reads (argclones.py)
            return
        scope = self.scopes[uid]
        base = self.scope_base[uid]
        params = scope.params
        if self.factories and site.dst >= 0 and scope.name.rpartition(".")[2] in self.factories:
            self.factory_call(site, self.factories[scope.name.rpartition(".")[2]])
        given: dict[int, Any] = {}
        positional = [i for i, p in enumerate(params) if p.kind in ("pos", "posonly")]
        star = next((i for i, p in enumerate(params) if p.kind == "star"), -1)
        dstar = next((i for i, p in enumerate(params) if p.kind == "dstar"), -1)
        at = 0
        if recv is not None and positional:
            self.add(params[positional[0]].var + base, (recv,))
            given[positional[0]] = recv
            at = 1
        for n_arg, (var, starred) in enumerate(site.args):
            if starred and spread_by_position(self, site, n_arg, uid, positional[at:], star):
                continue
            if starred:
                elements = self.elements(var, site.caller)
                for i in positional[at:]:
                    self.edge(elements, self.param_in(params[i].var + base))
                if star >= 0:
                    self.write(("star", uid), None, elements)
                continue
            if at < len(positional):
                self.edge(var, self.param_in(params[positional[at]].var + base))
                given[positional[at]] = var
                at += 1
            elif star >= 0:
                self.write(("star", uid), None, var)
        names = {p.name: i for i, p in enumerate(params) if p.kind in ("pos", "kw")}
        for name, var in site.kwargs:
            if name is None:
                self.splat_kwargs(var, uid, base, names, dstar)
            elif name in names:
                self.edge(var, self.param_in(params[names[name]].var + base))
                given[names[name]] = var
            elif dstar >= 0:
                self.write(("dstar", uid), self.V("k", "str", name), var)
        if site.dst < 0:
            return
        if scope.yields >= 0:
            self.add(site.dst, (self.V("g", uid),))
        else:
            self.edge(self.returned_to(uid, scope.ret + base, recv), site.dst)
        for i in scope.passthrough:
            if i in given:
                if isinstance(given[i], tuple):
                    self.add(site.dst, (given[i],))
                else:
                    self.edge(given[i], site.dst)
            elif i < len(params):
                self.edge(params[i].var + base, site.dst)

    def splat_kwargs(self, var: int, uid: int, base: int, names: dict[str, int], dstar: int) -> None:
        params = self.scopes[uid].params

        def spread(vals: Iterable[Value]) -> None:
            for v in vals:
                if v[0] == "o":
                    for name, i in names.items():
                        self.read(v[1], self.V("k", "str", name), self.param_in(params[i].var + base))
                    if dstar >= 0:
                        self.merge_obj(("dstar", uid), v[1])
        self.on(var, spread)

    # -- iteration ---------------------------------------------------------------------------
    def elements(self, var: int, caller: int) -> int:
        """A variable of the values iterating over ``var`` yields (implicit calls from ``caller``)."""
        key = (var, caller)
        found = self.elements_cache.get(key)
        if found is None:
            found = self.elements_cache[key] = self.new_var()
            dst = found
            self.each(var, lambda v: self.iter_value(v, dst, caller, 0))
        return found

    def iter_value(self, v: Value, dst: int, caller: int, line: int, names: tuple[str, str] = ITER) -> None:
        t = v[0]
        if t == "o":
            citers.pulled(self, v[1], caller, line)  # an itertools iterator pulls its iterables here
            if self.obj_kind.get(v[1]) != "dict":
                self.read(v[1], None, dst)
            else:
                self.edge(self.dict_keys(v[1]), dst)  # a dict iterates over its keys
        elif t == "g":
            self.edge(self.scopes[v[1]].yields + self.scope_base[v[1]], dst)
            resumed(self, v[1], caller, line)  # its body runs here
        elif t == "i":
            cid = v[1]
            it = self.new_var()
            site = self.site(it, (), caller, line, "implicit")
            self.subscribe(cid, names[0], lambda owner, var: self.on(var, lambda vals: self.call_values(
                site, self.bound_values(vals, v, cid, True, None))))

            def step(vals: Iterable[Value]) -> None:
                for r in vals:
                    if r[0] == "i":
                        nxt = self.site(dst, (), caller, line, "implicit")
                        self.subscribe(r[1], names[1], self.method_caller(nxt, r))
                    elif r[0] in ("g", "o"):
                        self.iter_value(r, dst, caller, line, names)
            self.on(it, step)

    # -- builtins -------------------------------------------------------------------------------
    def arg(self, site: Site, i: int, name: str = "") -> int:
        plain = [v for v, starred in site.args if not starred]
        if i < len(plain):
            return plain[i]
        return next((v for k, v in site.kwargs if k == name and name), -1)

    def callback(self, site: Site, fn: int, args: tuple[int, ...], dst: int) -> None:
        if fn >= 0:
            self.call_on(fn, self.site(dst, tuple((a, False) for a in args), site.caller, site.line, "callback"))

    def builtin(self, site: Site, name: str) -> None:  # noqa: C901 - one dispatch
        dst = site.dst
        stored.BUILTIN_HOOKS.get(name, stored.no_hook)(self, site)  # getattr of an unknown name, hasattr, dir, vars
        if name == "getattr":
            target, attr = self.arg(site, 0), self.arg(site, 1)
            self.edge(self.arg(site, 2), dst)
            if target >= 0 and attr >= 0:
                self.each(attr, lambda k: self.attr_instr(dst, target, k[2], site.caller, site.line), "k")
                self.on(attr, ("", type(self).getattr_prefix, dst, target, site))
        elif name == "setattr":
            target, attr, value = self.arg(site, 0), self.arg(site, 1), self.arg(site, 2)
            if target >= 0 and attr >= 0:
                self.each(attr, lambda k: self.setattr_instr(target, k[2], value, site.caller, site.line), "k")
                cid = self.self_vars.get(target)
                if cid is not None:  # setattr(self, name, v) in a method, the name unknown
                    setattr_unknown(self, cid, site.caller, attr)
        elif name in DECORATOR_BUILTINS:
            fn = self.arg(site, 0, "fget")
            tag = {"staticmethod": "sm", "classmethod": "cm", "property": "p"}[name]
            if fn >= 0 and dst >= 0:
                self.on(fn, lambda vals: self.add(dst, [self.V(tag, v[1], -1) if tag == "p" else self.V(tag, v[1])
                                                       for v in vals if v[0] == "f"]))
        elif name in ELEMENT_BUILTINS or name in ("map", "filter"):
            oid = ("call", site.id)
            obj = self.new_obj(oid, "set" if name in ("set", "frozenset") else "list")
            source = self.arg(site, 1 if name in ("map", "filter") else 0)
            elements = self.elements(source, site.caller) if source >= 0 else -1
            keys.key_hashed(self, obj, elements, site.caller, site.line)  # set(xs) hashes each x (keys.py)
            if name == "map":
                result = self.new_var()
                self.callback(site, self.arg(site, 0), (elements,), result)
                self.write(oid, None, result)
            else:
                self.write(oid, None, elements)
                if name == "filter" or name in KEY_CALLBACK:
                    self.callback(site, self.arg(site, 0) if name == "filter" else self.arg(site, 9, "key"),
                                  (elements,), -1)
            if dst >= 0:
                self.add(dst, (obj,))
        elif name == "next":  # type(x).__next__: x is the iterator (its __iter__ does not run)
            source = self.arg(site, 0)
            self.edge(self.arg(site, 1), dst)
            if source >= 0:
                nxt = self.site(dst, (), site.caller, site.line, "implicit")
                self.on(source, ("", Calls.next_value, nxt))
        elif name in ("min", "max"):
            source = self.arg(site, 0)
            elements = self.elements(source, site.caller) if source >= 0 else -1
            self.edge(elements, dst)
            self.callback(site, self.arg(site, 9, "key"), (elements,), -1)
        elif name in ARG_DUNDERS:
            implicit = self.site(dst if name in ("str", "repr", "format", "reversed", "dir") else -1, (),
                                 site.caller, site.line, "implicit")
            for var, starred in (site.args if name == "print" else site.args[:1]):
                if not starred:
                    self.on(var, ("i", typing_only.dunder_value, ARG_DUNDERS[name], implicit))
        elif name == "dict":
            oid = ("call", site.id)
            obj = self.new_obj(oid, "dict")
            source = self.arg(site, 0)
            if source >= 0:  # a dict copied, pairs keyed (members.py)
                self.each(source, lambda v: members.dict_of_pairs(self, oid, v), "o")
            for key, var in site.kwargs:
                if key is not None:
                    self.write(oid, self.V("k", "str", key), var)
            if dst >= 0:
                self.add(dst, (obj,))
        elif name in ("enumerate", "zip"):
            oid, pair = ("call", site.id), ("pair", site.id)
            obj, tup = self.new_obj(oid, "list"), self.new_obj(pair, "tuple")
            sources = [self.arg(site, 0)] if name == "enumerate" else [v for v, _ in site.args]
            for i, source in enumerate(sources):
                if source >= 0:
                    self.write(pair, self.V("k", "int", i + (name == "enumerate")), self.elements(source, site.caller))
            holder = self.new_var()
            self.add(holder, (tup,))
            self.write(oid, None, holder)
            if dst >= 0:
                self.add(dst, (obj,))
        elif name == "type" and len(site.args) == 1 and dst >= 0:
            self.on(self.arg(site, 0), lambda vals: self.add(dst, [self.V("c", v[1]) for v in vals if v[0] == "i"]))
        elif name == "property.__init__":  # property.__init__(self, fget=...): the getter is self.fget
            target, fget = self.arg(site, 0), self.arg(site, 1, "fget")
            if target >= 0 and fget >= 0:
                self.setattr_instr(target, "fget", fget, site.caller, site.line)
        elif name == "property.__get__":  # property.__get__(self, obj, type): self.fget(obj)
            target, instance = self.arg(site, 0), self.arg(site, 1)
            if target >= 0:
                fget = self.new_var()
                self.attr_instr(fget, target, "fget", site.caller, site.line)
                self.callback(site, fget, (instance,), dst)
        elif name == "globals" and dst >= 0:
            self.add(dst, (self.V("G", self.scope_module[site.caller]),))

    def dynamic_setattr(self, cid: int) -> None:
        """``setattr(self, name, v)`` with a name no one knows: any attribute of the class may exist."""
        self.dynamic_fields.add(cid)

    def attr_value(self, v: Value, name: str, dst: int, caller: int, line: int) -> None: ...
    getattr_prefix: Callable[..., None]  # named.Named (no stub here: Calls precedes Named in the MRO)

    def next_value(self, v: Value, site: Site) -> None:
        if v[0] == "i":
            self.dunder_value(v, ("__next__",), site)
        elif v[0] == "g":
            self.edge(self.scopes[v[1]].yields + self.scope_base[v[1]], site.dst)
            resumed(self, v[1], site.caller, site.line)
        elif v[0] == "o":  # a list's element, a dict's key (next(iter(d)): keys.py); an itertools iterator pulled
            citers.pulled(self, v[1], site.caller, site.line)
            keys.next_item(self, v, site.dst)

    def builtin_method(self, site: Site, name: str, recv: Value) -> None:
        dst = site.dst
        if recv[0] == "p":
            fn = self.arg(site, 0)
            if fn >= 0 and dst >= 0:
                self.on(fn, lambda vals: self.add(dst, [
                    self.V("p", v[1], recv[2]) if name == "getter" else self.V("p", recv[1], v[1])
                    for v in vals if v[0] == "f" and name in ("getter", "setter")]))
            return
        if recv[0] == "k":  # a string's method: its case changed, or split (named.py)
            self.str_method(site, name, recv)
            return
        oid = recv[1]
        keys.container_method(self, site, name, recv)  # a key hashed; a key hashed, a list sorted (keys.py)
        a0, a1 = self.arg(site, 0), self.arg(site, 1)
        if name in ("append", "add", "appendleft"):
            self.write(oid, None, a0)
        elif name == "insert":
            self.write(oid, None, a1)
        elif name == "extend" and a0 >= 0:
            self.write(oid, None, self.elements(a0, site.caller))
        elif name == "update":
            if a0 >= 0:
                self.each(a0, lambda v: self.merge_obj(oid, v[1]), "o")
            for key, var in site.kwargs:
                if key is not None:
                    self.write(oid, self.V("k", "str", key), var)
        elif name in ("get", "setdefault", "pop") and dst >= 0:
            if name == "setdefault" and a1 >= 0:
                self.keyed(a0, lambda key: self.write(oid, key, a1))
            if name == "pop" and a0 < 0:
                self.read(oid, None, dst)
            else:
                self.keyed(a0, lambda key: self.read(oid, key, dst))
                self.edge(a1, dst)
        elif name in ("values", "items", "copy") and dst >= 0:
            new = ("call", site.id)
            obj = self.new_obj(new, "dict" if name == "copy" else "list")
            if name == "copy":
                self.merge_obj(new, oid)
            elif name == "values":
                for every in (ALL, NAMED):
                    self.edge(self.slot(oid, every), self.slot(new, UNK))
                    self.edge(self.slot(oid, every), self.slot(new, ALL))
            else:
                pair = ("pair", site.id)
                tup = self.new_obj(pair, "tuple")
                self.write(pair, self.V("k", "int", 1), self.slot(oid, ALL))
                self.write(pair, self.V("k", "int", 1), self.slot(oid, NAMED))
                self.write(pair, self.V("k", "int", 0), self.pair_keys(oid))
                holder = self.new_var()
                self.add(holder, (tup,))
                self.write(new, None, holder)
            self.add(dst, (obj,))
        elif name == "sort":
            self.callback(site, self.arg(site, 9, "key"), (self.slot(oid, ALL),), -1)

    def keyed(self, key_var: int, fn: Any) -> None:
        """fn(key) for each constant the key holds; fn(None) (any key) for anything else."""
        if key_var < 0:
            fn(None)
            return
        self.each(key_var, lambda k: fn(k if k[0] in "kn" else None))
        self.when_empty(key_var, lambda: fn(None))

    # provided by the solver
    def attr_instr(self, dst: int, obj: int, name: str, caller: int, line: int) -> None: ...
    def setattr_instr(self, obj: int, name: str, src: int, caller: int, line: int) -> None: ...
    def when_empty(self, var: int, fn: Any, late: bool = False) -> None: ...
    def factory_call(self, site: Site, rule: Any) -> None: ...
