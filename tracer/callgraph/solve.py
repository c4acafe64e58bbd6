"""The fixpoint: every module's instructions linked into one constraint system over
value sets (PyCG's assignment graph, with SSA locals, the MRO, instances, bound
methods and containers), solved by propagating only what is new. What stays
unknown is left empty and counted by cause, never guessed.

Values are tuples: ``("f", scope)`` a function, ``("b", scope, self)`` a bound
method, ``("c", cls)`` a class, ``("i", cls)`` an instance, ``("m", name)`` a module
of the tree, ``("x", dotted)`` something outside it, ``("k", type, v)`` a constant,
``("o", site)`` a container, ``("g", scope)`` a generator, ``("s", cls, self)`` a
``super()`` object, ``("p", getter, setter)`` a property, ``("sm"|"cm", scope)``
static and class methods, ``("B", name)`` a builtin, ``("bm", name, recv)`` a method
of a container or property.

After the first fixpoint, the rules that need "nothing else was found" run (a
decorator of no known value keeps the function, ``self`` of a method no call
reached is an instance of its class or of the subclasses the program creates, a
subscript whose key stayed unknown reads every slot), and solving continues;
each round only adds.
"""

from __future__ import annotations

import builtins
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import Any

from tracer.callgraph import watchers as w
from tracer.callgraph.attrs import Attrs
from tracer.callgraph.calls import DECORATOR_BUILTINS, PROGRAM_CALLABLE, Site
from tracer.callgraph.clones import IDENTITY, Clones
from tracer.callgraph.generators import resume_consumed, slice_value
from tracer.callgraph.guards import caught, isa_instr
from tracer.callgraph.heap import UNK, Value
from tracer.callgraph.ir import ModuleIR, ScopeIR
from tracer.callgraph.keys import MAPPED, contained, written_item
from tracer.callgraph.named import Named
from tracer.callgraph.protocols import AITER, ITER
from tracer.callgraph.registry import RegistryRule
from tracer.callgraph.seeds import Seeds
from tracer.callgraph.typing_only import implicit_call, item_value
from tracer.callgraph.valuesets import MAX_KEYS, MAX_VALUES, ValueSets, VarMap

BUILTIN_NAMES = frozenset(dir(builtins))
MAX_ROUNDS = 40
SMALL_SUCC = 8  # successors (watchers) kept in a tuple before a dict (list)
Watcher = Any  # Callable[[tuple[Value, ...]], object] | tuple (see Solver.on)


class Solver(Seeds, Clones, Named, ValueSets):
    def __init__(self, modules: list[ModuleIR], prefix: str = "", entry_seeds: dict[str, str] | None = None,
                 registries: tuple[RegistryRule, ...] = ()):
        self.prefix = prefix
        self.entry_seeds = dict(entry_seeds or {})  # method name -> module variable naming entry classes
        self.entry_vars: dict[str, int] = {}
        self.entry_seeded = 0
        self.unbudgeted: set[int] = set()  # variables the value budget does not cut (seeded receivers)
        self.entry_rules: list[tuple[Callable[[], bool], Callable[[], None]]] = []
        # var -> its values: a tuple while few, then a dict (keys only), both in insertion order: what the
        # budget cuts must not depend on how a set of tuples of str iterates (it changes with PYTHONHASHSEED)
        self.pts = VarMap()
        # var -> its successors: one int, a tuple while few, then [in order, sorted] (two int arrays:
        # a dict of thousands of ints was ~40 bytes a successor, the arrays are 16)
        self.succ = VarMap()
        self.watch = VarMap()
        self.pending: dict[int, list[Value]] = {}
        self.key_count = bytearray()
        self.values_cut = 0
        self.queue: list[int] = []
        self.values: dict[Value, tuple[Value]] = {}
        self.init_value_sets()
        self.edges: dict[tuple[int, int], str] = {}
        self.bound_sites: set[int] = set()
        self.external_sites: set[int] = set()
        self.instantiated: set[int] = set()
        # (late, condition, fire): condition a callable or a var that must stay empty; fire a callable
        # or a tuple (f, *args) for f(self, *args)
        self.deferred: list[tuple[bool, Any, Any]] = []
        self.init_heap()
        self.init_calls()
        self.init_attrs()
        self.init_narrow()
        self.init_clones()
        self.modules = {m.module for m in modules}
        self.packages = {".".join(m.module.split(".")[:i]) for m in modules for i in range(1, m.module.count(".") + 1)}
        self.ns: dict[tuple[str, str], int] = {}
        self.stars: dict[str, list[str]] = {}
        self.scopes: list[ScopeIR] = []
        self.scope_base: list[int] = []
        self.scope_module: list[str] = []
        self.scope_cbase: list[int] = []
        self.class_attrs: list[dict[str, int]] = []
        self.class_bases: list[tuple[int, ...]] = []
        self.class_names: list[str] = []
        self.class_module: list[str] = []
        self.dyn_attrs: dict[int, dict[str, int]] = {}
        self.sites: list[Site] = []
        self.irs = modules
        base = 0
        self.offsets: list[tuple[int, int, int]] = []
        for m in modules:
            sbase, cbase = len(self.scopes), len(self.class_attrs)
            self.offsets.append((base, sbase, cbase))
            for s in m.scopes:
                self.scopes.append(s)
                self.scope_base.append(base)
                self.scope_module.append(m.module)
                self.scope_cbase.append(cbase)
            for c in m.classes:
                self.class_attrs.append({n: v + base for n, v in c.attrs})
                self.class_bases.append(tuple(b + base for b in c.bases if b >= 0))
                self.class_names.append(c.name)
                self.class_module.append(m.module)
            for name, var in m.globals:
                self.ns[(m.module, name)] = var + base
            base += m.nvars
        self.next_var = base
        for per_var in (self.pts, self.succ, self.watch):
            per_var.extend([None] * base)
        self.dunders = {name for attrs in self.class_attrs for name in attrs if name.startswith("__")}
        self.ints: Any = list(range(base))
        self.interned: dict[Any, Any] | None = {}  # watchers.call_args
        self.init_seeds()
        self.init_registries(registries)

    # -- the propagation core -------------------------------------------------------------------
    def V(self, *parts: Any) -> Value:
        found = self.values.get(parts) or self.values.setdefault(parts, (parts,))  # its 1-tuple: ValueSets.single
        return found[0]

    def new_var(self) -> int:
        self.pts.append(None)
        self.succ.append(None)
        self.watch.append(None)
        self.next_var += 1
        return self.next_var - 1

    def add(self, var: int, values: Iterable[Value], whole: Any = None) -> None:
        """Add ``values`` to ``var`` (``whole``: ValueSets.keep)."""
        if var < 0:
            return
        have = self.pts[var]
        if have is None:
            have = ()
        new = [v for v in values if v not in have]
        if not new:
            return
        if len(new) > 1:
            new = list(dict.fromkeys(new))
        if (len(have) + len(new) > MAX_VALUES or any(v[0] == "k" for v in new)) and var not in self.unbudgeted:
            new = self.within_budget(var, have, new)
            if not new:
                return
        self.keep(var, have, new, whole)
        pending = self.pending.get(var)
        if pending is None:
            self.pending[var] = new  # values new to var are new to its pending list too: a list will do
            self.queue.append(var)
        else:
            pending.extend(new)

    def edge(self, src: int, dst: int) -> None:
        if src < 0 or dst < 0 or src == dst:
            return
        succ = self.succ[src]
        if succ is None:
            self.succ[src] = dst  # most variables flow into one other: the var itself, then a tuple, then arrays
        elif succ.__class__ is int:
            if succ == dst:
                return
            self.succ[src] = (succ, dst)
        elif succ.__class__ is tuple:
            if dst in succ:
                return
            if len(succ) < SMALL_SUCC:
                self.succ[src] = (*succ, dst)
            else:
                self.succ[src] = [array("i", (*succ, dst)), array("i", sorted((*succ, dst)))]
        else:
            order, ordered = succ
            at = bisect_left(ordered, dst)
            if at < len(ordered) and ordered[at] == dst:
                return
            ordered.insert(at, dst)
            order.append(dst)
        have = self.pts[src]
        if have:
            self.add(dst, have if have.__class__ is tuple else tuple(have), have)

    def on(self, var: int, fn: Watcher) -> None:
        """fn(values) for the values of ``var``, now and as they arrive. A watcher is a callable, or
        a tuple ``(tag, f)`` (f(v) for each value of kind ``tag``, "" any) or ``(tag, f, *args)``
        (f(self, v, *args)): plain data where a closure per instruction was most of the memory."""
        if var < 0:
            return
        ws = self.watch[var]  # the watcher alone (most), a tuple while few, then a list
        if ws is None:
            self.watch[var] = fn
        elif ws.__class__ is list:
            ws.append(fn)
        elif ws.__class__ is not tuple or ws[0].__class__ is str:
            self.watch[var] = (ws, fn)
        else:
            self.watch[var] = (*ws, fn) if len(ws) < SMALL_SUCC else [*ws, fn]
        have = self.pts[var]
        if have:
            self.fire(fn, tuple(have))

    def fire(self, fn: Watcher, vals: tuple[Value, ...]) -> None:
        if fn.__class__ is not tuple:
            fn(vals)  # type: ignore[operator]
            return
        tag, f = fn[0], fn[1]
        if tag:
            vals = tuple(v for v in vals if v[0] == tag and (tag != "k" or v[1] == "str"))
        if len(fn) == 2:
            for v in vals:
                f(v)
        else:
            args = fn[2:]
            for v in vals:
                f(self, v, *args)

    def each(self, var: int, fn: Callable[[Value], object], tag: str = "") -> None:
        """fn(value) for every value of ``var`` (of kind ``tag`` when given; "k": string constants), now and later."""
        self.on(var, (tag, fn))

    def when_empty(self, var: int, fn: Any, late: bool = False) -> None:
        """fn() once the fixpoint leaves ``var`` empty (``late``: only when no early rule fires)."""
        self.deferred.append((late, var, fn))  # a var: the rule holds while it is empty

    def run(self) -> None:
        queue, pending, succ, watch = self.queue, self.pending, self.succ, self.watch
        while queue:
            var = queue.pop()
            delta = tuple(pending.pop(var))
            out = succ[var]
            if out is not None:
                whole = self.pts[var]
                for dst in (out,) if out.__class__ is int else out if out.__class__ is tuple else tuple(out[0]):
                    self.add(dst, delta, whole)
            ws = watch[var]  # one watcher (a callable, or a tuple tagged by a str), a tuple of them, a list
            for fn in () if ws is None else tuple(ws) if ws.__class__ is list else (
                    ws if ws.__class__ is tuple and ws[0].__class__ is not str else (ws,)):
                if fn.__class__ is tuple:
                    self.fire(fn, delta)
                else:
                    fn(delta)

    # -- names across modules -------------------------------------------------------------------
    def export(self, module: str, name: str, depth: int = 0) -> int:
        """The var of ``module.name`` (its own binding or through its star imports); -1 if none."""
        var = self.ns.get((module, name))
        if var is not None:
            return var
        if depth < 20 and not name.startswith("_"):
            for provider in self.stars.get(module, ()):
                found = self.export(provider, name, depth + 1)
                if found >= 0:
                    return found
        return -1

    def in_tree(self, name: str) -> str:
        """The tree's module an absolute name means: itself, or (a script's import, with its folder
        on sys.path) the same name inside the scanned package; "" when it is outside."""
        if name in self.modules or name in self.packages:
            return name
        if self.prefix and (f"{self.prefix}.{name}" in self.modules or f"{self.prefix}.{name}" in self.packages):
            return f"{self.prefix}.{name}"
        return ""

    def module_value(self, name: str) -> Value:
        found = self.in_tree(name)
        return self.V("m", found) if found else self.V("x", name)

    # -- instructions -------------------------------------------------------------------------------
    def solve(self) -> None:
        for m in self.irs:
            stars = getattr(m.instrs, "stars", None)  # a marshalled module knows its star imports
            for name in stars if stars is not None else (ins[1] for ins in m.instrs if ins[0] == "star"):
                self.stars.setdefault(m.module, []).append(name)
        modules, self.irs = self.irs, []
        for at, (base, sbase, cbase) in enumerate(self.offsets):
            m, modules[at] = modules[at], None  # type: ignore[call-overload]  # installed: freed as we go
            for i, s in enumerate(m.scopes):
                for p in s.params:
                    if p.kind in ("star", "dstar"):
                        oid = ("star" if p.kind == "star" else "dstar", sbase + i)
                        self.add(p.var + base, (self.new_obj(oid, "tuple" if p.kind == "star" else "dict"),))
            for cid in range(cbase, cbase + len(m.classes)):
                for var in self.class_bases[cid]:
                    self.on(var, ("c", lambda s, v, cid: s.base_changed(cid, v[1]), cid))
            instrs = list(m.instrs)
            self.keep_clone_code(m, instrs, base, sbase, cbase, len(self.sites))  # before: a call may run now
            for instr in instrs:
                self.install(m, base, sbase, cbase, instr)
            del instrs
        self.interned, self.ints = None, IDENTITY  # installed: only copies (their own numbers) install more
        self.run()
        seeded = False
        for _ in range(MAX_ROUNDS):
            for late in (False, True):
                rules, self.deferred = self.deferred, []
                for rule in rules:  # conditions only turn false as values arrive: a rule is checked once
                    if rule[0] != late:
                        self.deferred.append(rule)
                    elif (not self.pts.get(rule[1])) if rule[1].__class__ is int else rule[1]():
                        fire = rule[2]
                        if fire.__class__ is tuple:
                            fire[0](self, *fire[1:])
                        else:
                            fire()
                if late and not self.queue and not seeded:
                    self.seed_self()
                    seeded = True
                if late and not self.queue and seeded and self.entry_rules:
                    rules_now, self.entry_rules = self.entry_rules, []
                    for holds, fire in rules_now:
                        if holds():
                            fire()
                # last: the protocol's receivers are the entry classes, not what their attributes suggest
                if late and not self.queue and seeded and not self.entry_rules:  # then heap.binop's prefixes
                    self.last_round()
                if self.queue:
                    break
            if not self.queue:
                break
            self.run()
        resume_consumed(self)  # edges only: no value moves

    def install(self, m: ModuleIR, base: int, sbase: int, cbase: int, ins: tuple[Any, ...]) -> None:  # noqa: C901
        op, ints = ins[0], self.ints

        def g(v: int) -> int:  # one int object per variable, however many instructions name it
            return ints[v + base] if v >= 0 else -1

        def n(x: int) -> int:  # a scope or a line held by watchers and sites: one object per number too
            return ints[x] if 0 <= x < len(ints) else x
        if op == "copy":
            self.edge(g(ins[2]), g(ins[1]))
        elif op == "func":
            self.add(g(ins[1]), (self.V("f", sbase + ins[2]),))
        elif op == "class":
            self.add(g(ins[1]), (self.V("c", cbase + ins[2]),))
        elif op == "const":
            self.add(g(ins[1]), (self.V(*ins[2]),))
        elif op == "glob":
            var = self.export(m.module, ins[2])
            if var >= 0:
                self.edge(var, g(ins[1]))
            elif m.is_package and self.in_tree(f"{m.module}.{ins[2]}") == f"{m.module}.{ins[2]}":
                # importing pkg.sub binds sub in pkg's namespace: `from .sub import *; sub.f()` in pkg/__init__
                self.add(g(ins[1]), (self.V("m", f"{m.module}.{ins[2]}"),))
            elif ins[2] in BUILTIN_NAMES:
                self.add(g(ins[1]), (self.V("B", ins[2]),))
        elif op == "import":
            self.add(g(ins[1]), (self.module_value(ins[2]),))
        elif op == "from":
            dst, module, name = g(ins[1]), self.in_tree(ins[2]) or ins[2], ins[3]
            if f"{module}.{name}" in self.modules or f"{module}.{name}" in self.packages:
                self.add(dst, (self.V("m", f"{module}.{name}"),))
            elif module in self.modules:
                self.edge(self.export(module, name), dst)
                if self.export(module, name) < 0:
                    self.module_getattr(module, name, dst, n(sbase), 0)
            elif module not in self.packages:
                self.add(dst, (self.V("x", f"{module}.{name}"),))
        elif op == "attr":
            self.attr_instr(g(ins[1]), g(ins[2]), ins[3], n(sbase + ins[4]), n(ins[5]))
        elif op == "setattr":
            self.setattr_instr(g(ins[1]), ins[2], g(ins[3]), n(sbase + ins[4]), n(ins[5]))
        elif op == "item":
            dst, obj, key = g(ins[1]), g(ins[2]), g(ins[3])
            # written in the source (a scope given): an instance's __getitem__ runs (the edge only)
            self.on(obj, ("", item_value, key, dst, *((n(sbase + ins[4]), n(ins[5])) if len(ins) > 4 else ())))
        elif op == "setitem":
            obj, key, src = g(ins[1]), g(ins[2]), g(ins[3])
            if len(ins) > 4:  # written in the source (not a literal's slot): an instance's __setitem__ runs
                self.on(obj, ("", written_item, key, src, n(sbase + ins[4]), n(ins[5])))  # keys.py: hashed, stored
            else:
                self.on(obj, ("o", Solver.setitem_value, key, src))
        elif op == "alloc":
            self.add(g(ins[1]), (self.new_obj(g(ins[1]), ins[2], ins[3]),))
        elif op == "merge":
            self.on(g(ins[2]), ("o", w.merge_into, g(ins[1])))
        elif op == "call":
            site = Site(n(len(self.sites)), g(ins[1]), w.call_args(self, g, ins[3]),
                        tuple((k, g(a)) for k, a in ins[4]), n(sbase + ins[5]), n(ins[6]), ins[7], ins[8])
            self.sites.append(site)
            self.note_call(g(ins[2]), site.id)
            self.call_on(g(ins[2]), site)
        elif op == "decorate":
            self.decorate(g(ins[1]), g(ins[2]), g(ins[3]), n(sbase + ins[4]), n(ins[5]))
        elif op == "super":
            dst, self_var, cls_var = g(ins[1]), g(ins[3]), g(ins[4])
            if ins[2] >= 0:
                self.on(self_var, ("", w.super_of, cbase + ins[2], dst))
            elif cls_var >= 0:
                def pairs(_: Iterable[Value]) -> None:
                    self.add(dst, [self.V("s", c[1], v) for c in tuple(self.pts.get(cls_var, ())) if c[0] == "c"
                                   for v in tuple(self.pts.get(self_var, ())) if v[0] in "ic"])
                self.on(cls_var, pairs)
                self.on(self_var, pairs)
        elif op == "iter" or op == "aiter":
            self.on(g(ins[2]), ("", w.iter_into, g(ins[1]), n(sbase + ins[3]), n(ins[4]), ITER if op == "iter" else AITER))
        elif op == "dunder":
            contained(self, ins, g, n(sbase + ins[5]), n(ins[6]))  # `k in d`: a dict or a set hashes k (keys.py)
            names = tuple(x for x in ins[3] if x in self.dunders or x in MAPPED and "__getitem__" in self.dunders)
            if names:
                self.on(g(ins[2]), ("i", implicit_call, ins[3], g(ins[1]), tuple(g(a) for a in ins[4]),  # all: typing_only
                                    n(sbase + ins[5]), n(ins[6])))
        elif op == "unpack":
            index_key = self.V("k", "int", ins[3]) if ins[3] >= 0 else None
            self.on(g(ins[2]), ("o", w.unpack_into, index_key, g(ins[1])))
        elif op == "star_unpack":
            dst, rest = g(ins[1]), ("unpacked", g(ins[1]))
            self.add(dst, (self.new_obj(rest, "list"),))
            self.on(g(ins[2]), ("o", w.merge_into, rest))
        elif op == "raise":
            site = self.site(-1, (), n(sbase + ins[2]), n(ins[3]), "constructor")
            self.on(g(ins[1]), ("c", w.construct_raised, site))
            self.on(g(ins[1]), ("", w.raised, None))
        elif op == "instance":
            caught(self, g(ins[1]), g(ins[2]))
        elif op == "binop":
            self.binop(g(ins[1]), g(ins[2]), g(ins[3]))
        elif op == "isa":
            isa_instr(self, g(ins[1]), g(ins[2]), tuple(g(c) for c in ins[3]))
        elif op == "slice":
            self.on(g(ins[2]), ("", slice_value, g(ins[1]), n(sbase + ins[3]), n(ins[4])))
        elif op == "narrow":
            self.narrow_instr(g(ins[1]), tuple(g(c) for c in ins[2]), ins[3])

    def setitem_value(self, v: Value, key: int, src: int, caller: int = -1, line: int = 0) -> None:
        if v[0] != "o":
            if v[0] == "i" and caller >= 0 and "__setitem__" in self.dunders:
                self.implicit_call(v, ("__setitem__",), -1, (), caller, line)
            return
        oid = v[1]
        if key < 0:
            self.write(oid, None, src)
            return
        self.on(key, ("", Solver.write_key, oid, src))
        self.when_empty(key, (Solver.write, oid, None, src))

    def write_key(self, k: Value, oid: Any, src: int) -> None:
        self.write(oid, k if k[0] in "kn" else None, src)  # "n": a name of dir() (members.py)

    def decorate(self, dst: int, dec: int, fn: int, caller: int, line: int) -> None:
        site = self.site(dst, ((fn, False),), caller, line, "decorator")
        self.call_on(dec, site)
        # a decorator of no known value keeps the function; so does one of ours whose result stays unknown
        self.deferred.append((False, lambda: not any(v[0] in PROGRAM_CALLABLE or v[0] == "B" and v[1] in DECORATOR_BUILTINS
                                                     for v in self.pts.get(dec, ())), lambda: self.edge(fn, dst)))
        self.when_empty(dst, lambda: self.edge(fn, dst), late=True)

    def attr_instr(self, dst: int, obj: int, name: str, caller: int, line: int) -> None:
        self.on(obj, ("", Attrs.attr_value, name, dst, caller, line))
        if obj in self.param_vars:
            self.param_reads.setdefault(obj, set()).add(name)
            self.note_seedable_read(obj, dst)
        elif obj in self.read_vars:  # md.block.register: read off what is read off a seedable receiver
            self.note_seedable_read(obj, dst)
        if name in self.entry_seeds:
            self.unbudgeted.update((obj, dst))  # every entry class may be the receiver: none is cut
        if name in self.entry_seeds and self.may_seed(caller):
            self.note_seedable_read(obj, dst)
            # a protocol's method read off a receiver no class of the tree reaches (the runner's
            # model, built from a registry at run time): the receiver is one of the entry classes
            # checked last: only once every other rule (self of methods no call reached included) is done
            self.entry_rules.append((lambda: not any(v[0] in ("i", "c") for v in self.pts.get(obj, ())),
                                     lambda: self.seed_entries(obj, self.entry_seeds[name])))
        elif name in self.registry_seeds:  # the same, the entry classes named by a registry dict
            self.unbudgeted.update((obj, dst))
            # (a wrapper the runner puts around the model, CUDAGraphWrapper, has no such method either)
            self.entry_rules.append((lambda: not any(v[0] in ("i", "c") and self.lookup(v[1], name) is not None
                                                     for v in self.pts.get(obj, ())),
                                     lambda: self.seed_registry(obj, self.registry_seeds[name])))

    # -- answers ---------------------------------------------------------------------------------------
    def site_status(self, site: Site) -> str:
        """"bound", "external" (only builtins or code outside the tree) or the cause it stayed unknown."""
        copies = self.site_clones.get(site.id, ())  # the same call in the method's copies (clones.py)
        if site.id in self.bound_sites or any(c in self.bound_sites for c in copies):
            return "bound"
        if site.id in self.external_sites or any(c in self.external_sites for c in copies):
            return "external"
        return site.shape


__all__ = ["DECORATOR_BUILTINS", "MAX_KEYS", "MAX_VALUES", "PROGRAM_CALLABLE", "UNK", "Solver"]
