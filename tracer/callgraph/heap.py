"""What values hold: instance fields, class attributes through the C3 MRO (across
modules, re-resolved when a base becomes known late), container slots by constant
key, module namespaces. A mixin of the solver (solve.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tracer.bind.mro import after as mro_after
from tracer.bind.mro import linearize
from tracer.callgraph.members import slot_made
from tracer.callgraph.objects import object_field
from tracer.callgraph.protocols import PREFIX
from tracer.callgraph.valuesets import VarMap

Value = tuple[Any, ...]
MAX_JOINED = 64  # strings a binop may make from known string parts
ALL, UNK = ("*all",), ("*unk",)  # every value of a container / values stored under an unknown key
NAMED = ("*named",)  # every value a container keeps under names of attributes (members.py)
CONTAINER_METHODS = {"append", "add", "insert", "extend", "update", "setdefault", "get", "pop", "values",
                     "items", "copy", "sort", "popitem", "appendleft", "remove", "discard", "index", "count"}


class Heap:
    # provided by the solver core
    pts: VarMap  # var -> a tuple or a dict of its values (solve.Solver.add, valuesets.ValueSets.keep)
    class_attrs: list[dict[str, int]]
    class_bases: list[tuple[int, ...]]
    class_names: list[str]
    modules: set[str]
    packages: set[str]
    dyn_attrs: dict[int, dict[str, int]]
    named_slots: dict[Any, list[Any]]

    def new_var(self) -> int:
        raise NotImplementedError

    def add(self, var: int, values: Iterable[Value]) -> None:
        raise NotImplementedError

    def edge(self, src: int, dst: int) -> None:
        raise NotImplementedError

    def on(self, var: int, fn: Any) -> None:
        raise NotImplementedError

    def each(self, var: int, fn: Callable[[Value], object], tag: str = "") -> None:
        raise NotImplementedError

    def export(self, module: str, name: str) -> int:
        raise NotImplementedError

    def V(self, *parts: Any) -> Value:
        raise NotImplementedError

    def when_empty(self, var: int, fn: Any, late: bool = False) -> None:
        raise NotImplementedError

    def init_heap(self) -> None:
        self.slots: dict[tuple[Any, Any], int] = {}
        self.obj_keys: dict[Any, list[Any]] = {}
        self.key_listeners: dict[Any, list[Any]] = {}  # container -> the containers copying its every key
        self.obj_len: dict[Any, int] = {}
        self.obj_kind: dict[Any, str] = {}
        self.fields: dict[tuple[Value, str], int] = {}
        self.mro_cache: dict[int, list[int]] = {}
        self.subs: dict[int, list[list[Any]]] = {}  # class -> [name, after, fn, delivered]
        self.children: dict[int, set[int]] = {}  # class -> the classes naming it as a base
        self.prefixed: dict[Any, bool] = {}  # binops whose string is known only by its start: fired?
        self.named_slots: dict[Any, list[Any]] = {}  # container -> its slots keyed by names (members.py)
        self.last_rules: list[tuple[int, Any]] = []  # (var, fire): fire() if var is empty once all else is done
        self.keys_vars: dict[Any, int] = {}  # dict -> the var of its constant keys (what iterating it yields)
        self.names_vars: dict[Any, int] = {}  # dict -> the var of its attribute-name keys (heap.pair_keys)

    # -- MRO ------------------------------------------------------------------------------
    def bases(self, cid: int) -> list[int]:
        out: list[int] = []
        for var in self.class_bases[cid]:
            found = sorted(v[1] for v in self.pts.get(var, ()) if v[0] == "c")
            out.extend(c for c in found if c not in out and c != cid)
        return out

    def mro(self, cid: int, depth: int = 0) -> list[int]:
        """C3 (``tracer.bind.mro``, the scan's resolver uses the same), over the bases known so far."""
        found = self.mro_cache.get(cid)
        if found is not None:
            return found
        self.mro_cache[cid] = [cid]  # a cycle reads the class alone
        if depth > 60:
            return [cid]
        result, _ = linearize(cid, self.bases(cid), lambda b: self.mro(b, depth + 1))
        self.mro_cache[cid] = result
        return result

    def lookup(self, cid: int, name: str, after: int = -1) -> tuple[int, int] | None:
        order = self.mro(cid)
        if after >= 0:
            order = mro_after(order, after)
        for k in order:
            var = self.class_attrs[k].get(name)
            if var is None:
                var = self.dyn_attrs.get(k, {}).get(name)
            if var is not None:
                return k, var
        return None

    def subscribe(self, cid: int, name: str, fn: Any, after: int = -1) -> None:
        """fn(owner, var) for the class attribute ``name`` the MRO finds (again if a base resolves later)."""
        entry = [name, after, fn, None]  # delivered: None, one (owner, var), or a set of them
        self.subs.setdefault(cid, []).append(entry)
        self._deliver(cid, entry)

    def _deliver(self, cid: int, entry: list[Any]) -> None:
        found = self.lookup(cid, entry[0], entry[1])
        if found is None:
            return
        done = entry[3]
        if done is None:
            entry[3] = found
        elif done.__class__ is tuple:
            if done == found:
                return
            entry[3] = {done, found}
        elif found in done:
            return
        else:
            done.add(found)
        fn = entry[2]
        if fn.__class__ is tuple:  # (f, *args): f(self, owner, var, *args), plain data
            fn[0](self, *found, *fn[1:])
        else:
            fn(*found)

    def base_changed(self, cid: int, base: int) -> None:
        """A base of ``cid`` became known: its MRO and its subclasses' change, lookups are redone."""
        self.children.setdefault(base, set()).add(cid)
        affected, stack = set(), [cid]
        while stack:
            k = stack.pop()
            if k not in affected:
                affected.add(k)
                stack.extend(self.children.get(k, ()))
        for k in affected:
            self.mro_cache.pop(k, None)
        for k in sorted(affected):
            for entry in list(self.subs.get(k, ())):
                self._deliver(k, entry)

    # -- containers -------------------------------------------------------------------------
    def slot(self, oid: Any, key: Any) -> int:
        var = self.slots.get((oid, key))
        if var is None:
            var = self.slots[(oid, key)] = self.new_var()
            self.obj_keys.setdefault(oid, []).append(key)
            if oid in self.keys_vars and key[0] in "kn":
                self.add(self.keys_vars[oid], (key,))
            if key[0] == "n" or oid in self.named_slots:  # names of attributes (members.py)
                slot_made(self, oid, key, var)
            for dst_oid in list(self.key_listeners.get(oid, ())):
                self.edge(var, self.slot(dst_oid, key))
        return var

    def dict_keys(self, oid: Any) -> int:
        """The var of a dict's constant keys, as they are written: what ``for k in d`` binds."""
        var = self.keys_vars.get(oid)
        if var is None:
            var = self.keys_vars[oid] = self.new_var()
            self.add(var, [k for k in self.obj_keys.get(oid, ()) if k[0] in "kn"])
        return var

    def pair_keys(self, oid: Any) -> int:
        """The var of what the first of a ``d.items()`` pair is known to be: the dict's attribute
        names (kind "n": ``vars(x)``, ``__dict__``), not a literal's constant keys. Where a
        parameter's dicts from every call meet (``for k, v in attrs.items(): setattr(w, k, v)``),
        every key met every value: on sglang/srt ``graph --all`` then ran for minutes (stopped past
        160 CPU-s and 1.7 GB; 87 CPU-s and 787 MB without). No benchmark package lost an edge."""
        var = self.names_vars.get(oid)
        if var is None:
            var = self.names_vars[oid] = self.new_var()
            self.each(self.dict_keys(oid), lambda k: self.add(var, (k,)) if k[0] == "n" else None)
        return var

    def norm_key(self, oid: Any, key: Value) -> Any:
        if key[0] == "k" and key[1] == "int" and key[2] < 0 and self.obj_len.get(oid, -1) >= 0:
            return self.V("k", "int", key[2] + self.obj_len[oid])
        return key

    def write(self, oid: Any, key: Value | None, src: int) -> None:
        # what a name of dir() keys is apart: a read whose key stays unknown (ALL) selects none of it
        self.edge(src, self.slot(oid, NAMED if key is not None and key[0] == "n" else ALL))
        self.edge(src, self.slot(oid, UNK if key is None else self.norm_key(oid, key)))

    def read(self, oid: Any, key: Value | None, dst: int) -> None:
        if key is None:
            self.edge(self.slot(oid, ALL), dst)
            return
        self.edge(self.slot(oid, self.norm_key(oid, key)), dst)
        self.edge(self.slot(oid, UNK), dst)

    def merge_obj(self, dst_oid: Any, src_oid: Any) -> None:
        listeners = self.key_listeners.setdefault(src_oid, [])
        if dst_oid in listeners:
            return
        listeners.append(dst_oid)
        for key in list(self.obj_keys.get(src_oid, ())):
            self.edge(self.slot(src_oid, key), self.slot(dst_oid, key))
        self.slot(src_oid, ALL)

    def new_obj(self, oid: Any, kind: str, length: int = -1) -> Value:
        self.obj_kind.setdefault(oid, kind)
        self.obj_len.setdefault(oid, length)
        return self.V("o", oid)

    def binop(self, dst: int, a: int, b: int) -> None:
        """``a + b``: strings joined from known parts, a list holding both containers' slots."""
        oid = ("joined", dst)

        def combine(_: Iterable[Value]) -> None:
            left, right = tuple(self.pts.get(a, ())), tuple(self.pts.get(b, ()))
            ls = [x[2] for x in left if x[0] == "k" and x[1] == "str"]
            rs = [y[2] for y in right if y[0] == "k" and y[1] == "str"]
            # a name built from a few known parts ("on_" + event); beyond that the product is
            # no name anyone looks up, and recomputing it on every new value was quadratic
            if ls and rs and len(ls) * len(rs) <= MAX_JOINED:
                self.add(dst, [self.V("k", "str", x + y) for x in ls for y in rs])
            if ls and not rs and len(ls) <= MAX_JOINED:
                # "parse_" + name with name no known string: a prefix, once every other rule is done
                # (solve.py's last rules: a name filled by a late rule, self of a method no call
                # reached, made no prefix), of every start the left side holds then and later (not
                # those of the first call only: which came first was the answer)
                if oid not in self.prefixed:
                    self.prefixed[oid] = False
                    self.last_rules.append((b, lambda: self.prefix_all(oid, a, b, dst)))
                elif self.prefixed[oid]:
                    self.prefix_all(oid, a, b, dst)
            objs = [v for v in left + right if v[0] == "o"]
            if objs:
                self.add(dst, (self.new_obj(oid, "list"),))
                for v in objs:
                    self.merge_obj(oid, v[1])
        self.on(a, combine)
        self.on(b, combine)

    def run_last_rules(self) -> None:
        """The rules that wait for every other one (solve.py, once parameters are seeded)."""
        rules, self.last_rules = self.last_rules, []
        for var, fire in rules:
            if not self.pts.get(var):
                fire()

    def prefix_all(self, oid: Any, a: int, b: int, dst: int) -> None:
        self.prefixed[oid] = True
        left = [x[2] for x in tuple(self.pts.get(a, ())) if x[0] == "k" and x[1] == "str"]
        if len(left) <= MAX_JOINED:
            self.add(dst, [self.V("k", "prefix", x) for x in left if PREFIX.fullmatch(x)])

    # -- attributes ---------------------------------------------------------------------------
    def field(self, inst: Value, name: str) -> int:
        var = self.fields.get((inst, name))
        if var is None:
            var = self.fields[(inst, name)] = self.new_var()
            if len(inst) > 2:  # an object of its allocation site: its class's instance reads it too (objects.py)
                object_field(self, inst, name, var)
        return var

    def class_attr_var(self, cid: int, name: str) -> int:
        var = self.class_attrs[cid].get(name)
        if var is None:
            attrs = self.dyn_attrs.setdefault(cid, {})
            var = attrs.get(name)
            if var is None:
                var = attrs[name] = self.new_var()
        return var

    def bound_values(self, vals: Iterable[Value], recv: Value, cid: int, on_instance: bool,
                     getter: Callable[[int], None] | None) -> list[Value]:
        out: list[Value] = []
        for v in vals:
            t = v[0]
            if t == "f" and on_instance:
                out.append(self.V("b", v[1], recv))
            elif t == "sm":
                out.append(self.V("f", v[1]))
            elif t == "cm":
                out.append(self.V("b", v[1], self.V("c", cid)))
            elif t == "p" and on_instance:
                if getter is not None:
                    getter(v[1])
            else:
                out.append(v)
        return out

    def module_attr(self, mod: str, name: str, dst: int) -> None:
        sub = f"{mod}.{name}"
        if sub in self.modules or sub in self.packages:
            self.add(dst, (self.V("m", sub),))
            return
        var = self.export(mod, name)
        if var >= 0:
            self.edge(var, dst)
