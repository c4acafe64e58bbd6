"""Receivers the program's own calls leave empty, given values by rule once the fixpoint is
reached (a mixin of the solver): ``self`` of a method no call reached, the protocol's receivers
the runner builds at run time (entry classes), and parameters no caller fills (the package's
entry points, called by its users or tests) typed by the attributes the function reads on them."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from tracer.callgraph.abstract import never_made, stand_ins
from tracer.callgraph.attrs import Attrs
from tracer.callgraph.heap import Value
from tracer.callgraph.inherited import seed_inherited
from tracer.callgraph.registry import RegistryRule
from tracer.callgraph.typing_only import init_subclass_calls

MAX_DUCKS = 3  # classes a parameter may be taken to be an instance of
# why an edge is no value's proof (``stats.edges_assumed``): the call's receiver was given by a seed
ENTRY_CLASSES = "entry-classes"  # the runner's receiver taken to be one of the pack's entry classes
ATTRIBUTES = "attributes"  # a parameter no call fills, taken to be a class having the attributes read on it


class Seeds(Attrs):
    entry_vars: dict[str, int]
    entry_seeded: int
    instantiated: set[int]
    scope_cbase: list[int]
    scope_module: list[str]
    # modules (fnmatch patterns) whose reads of a pack's setter may be seeded with the entry
    # classes: the runner's (the pack's [runner] modules); empty: any module. A model's own
    # receiver (a class picked from another package's registry at run time) is never seeded.
    seed_modules: tuple[str, ...] = ()
    clone_code: dict[int, Any]  # clones.Clones
    clone_for: dict[tuple[int, Any], int]
    receiver_scope: Any

    def in_tree(self, name: str) -> str:  # the solver's (solve.Solver.in_tree)
        raise NotImplementedError

    def init_seeds(self) -> None:
        self.param_vars: set[int] = set()  # parameters a caller would fill (not self/cls)
        self.self_vars: dict[int, int] = {}  # a method's self var -> its class
        self.param_reads: dict[int, set[str]] = {}  # parameter -> the attribute names read on it
        self.self_fields: dict[int, set[str]] = {}  # class -> the names its methods set on self
        self.init_fields: dict[int, set[str]] = {}  # class -> the names its __init__ sets on self
        self.params_seeded = False
        self.ducks_seeded = 0
        self.inherited_seeded = 0  # inherited.py
        # provenance: the attribute reads off a receiver a seed may fill, the call sites calling them,
        # and once a seed filled it, those sites and the edges only they made (why, per edge)
        self.seed_reads: dict[int, list[int]] = {}
        self.read_vars: set[int] = set()
        self.calling: dict[int, list[int]] = {}
        self.assumed_sites: dict[int, str] = {}
        self.assumed_edges: dict[tuple[int, int], str] = {}
        for uid in range(len(self.scopes)):
            self.note_params(uid)
        init_subclass_calls(self)  # class statements calling their bases' hook (typing_only.py)

    def note_params(self, uid: int) -> None:
        """The parameters of scope ``uid`` (a method's copy's too: clones.py) a caller would fill."""
        scope, base = self.scopes[uid], self.scope_base[uid]
        first = 1 if scope.owner >= 0 and scope.method in ("instance", "class") else 0
        for i, p in enumerate(scope.params):
            if i < first and p.kind in ("pos", "posonly"):
                if scope.method == "instance":
                    self.self_vars[p.var + base] = self.scope_cbase[uid] + scope.owner
            elif p.kind in ("pos", "posonly", "kw"):
                self.param_vars.add(p.var + base)

    def may_seed(self, caller: int) -> bool:
        """Whether a read of a pack's setter in scope ``caller`` is the runner's (seed_modules)."""
        return not self.seed_modules or any(fnmatchcase(self.scope_module[caller], p) for p in self.seed_modules)

    def note_seedable_read(self, obj: int, dst: int) -> None:
        self.seed_reads.setdefault(obj, []).append(dst)
        self.read_vars.add(dst)

    def note_call(self, fn: int, site: int) -> None:
        if fn in self.read_vars:
            self.calling.setdefault(fn, []).append(site)

    def mark_assumed(self, obj: int, why: str) -> None:
        """The calls through what is read off ``obj`` (and read off that, ...) rest on the seed that filled it."""
        todo, seen = [obj], {obj}
        while todo:
            for dst in self.seed_reads.get(todo.pop(), ()):
                for site in self.calling.get(dst, ()):
                    self.assumed_sites.setdefault(site, why)
                if dst not in seen:
                    seen.add(dst)
                    todo.append(dst)

    def note_setattr(self, obj: int, name: str, caller: int = -1) -> None:
        cid = self.self_vars.get(obj)
        if cid is not None:
            self.self_fields.setdefault(cid, set()).add(name)
            if caller >= 0 and self.scopes[caller].name.endswith(".__init__"):  # typing_only.getattr_unless_set
                self.init_fields.setdefault(cid, set()).add(name)

    def seed_params(self) -> None:
        """A parameter nothing fills (its function is entered from outside the tree, or every caller
        passes something unknown) on which the function reads attributes: an instance of the
        classes (at most MAX_DUCKS; the created ones when some are) that have every one of those
        names, as class attributes (MRO) or set on self by their methods, and where each name has
        one definition among them (the call binds to one method). Counted
        (``stats.params_typed_by_attributes``)."""
        self.params_seeded = True
        wanted = {n for names in self.param_reads.values() for n in names if not n.startswith("__")}
        having: dict[str, set[int]] = {}
        for cid in range(len(self.class_names)):
            for k in self.mro(cid):
                for n in (*self.class_attrs[k], *self.dyn_attrs.get(k, ()), *self.self_fields.get(k, ())):
                    if n in wanted:
                        having.setdefault(n, set()).add(cid)
        for var, names in sorted(self.param_reads.items()):
            own = sorted((n for n in names if not n.startswith("__")), key=lambda n: len(having.get(n, ())))
            if not own or self.pts.get(var) or not having.get(own[0]):
                continue
            found = set(having[own[0]])
            for n in own[1:]:
                found &= having.get(n, set())
                if not found:
                    break
            made = {c for c in found if c in self.instantiated}
            chosen = sorted(made or {c for c in found if not never_made(self, c)})  # abstract.py
            # one definition of each name among them (a hierarchy): unrelated classes that happen
            # to share a method name (two parser states' append_token) are no evidence of either
            single = all(len({hit[0] for c in chosen if (hit := self.lookup(c, n)) is not None}) <= 1 for n in own)
            if chosen and len(chosen) <= MAX_DUCKS and single:
                self.ducks_seeded += 1
                self.mark_assumed(var, ATTRIBUTES)
                self.add(var, [self.V("i", c) for c in chosen])

    def init_registries(self, rules: tuple[RegistryRule, ...]) -> None:
        self.registry_seeds: dict[str, RegistryRule] = {r.setter: r for r in rules if r.setter}
        self.factories: dict[str, RegistryRule] = {f: r for r in rules for f in r.factories}
        self.registry_vars: dict[tuple[str, str], int] = {}
        # the framework's loader creates every registered class (by name, from the config)
        self.registry_made = [self.registered(r, "") for r in rules]

    def registered(self, rule: RegistryRule, architecture: str) -> int:
        """A variable of instances of the classes ``rule``'s registry names (``architecture`` "":
        every one), filled as their names become known; not cut by the value budget."""
        key = (rule.key(), architecture)
        found = self.registry_vars.get(key)
        if found is None:
            found = self.registry_vars[key] = self.new_var()
            self.unbudgeted.add(found)
            into = found

            def instances(vals: Iterable[Value]) -> None:
                self.add(into, [self.V("i", v[1]) for v in vals if v[0] == "c"])
            for arch, module, name in rule.classes:
                if architecture in ("", arch) and self.in_tree(module):
                    self.on(self.export(self.in_tree(module), name), instances)
        return found

    def seed_registry(self, obj: int, rule: RegistryRule) -> None:
        """The runner's receiver of the protocol's setter no class reaches: a registered class."""
        self.entry_seeded += 1
        self.edge(self.registered(rule, ""), obj)

    def factory_call(self, site: Any, rule: RegistryRule) -> None:
        """A call of a registry factory returns an instance of the class its keywords name."""
        for name, var in site.kwargs:
            if name is not None and name == rule.name_keyword:
                self.each(self.elements(var, -1), lambda k: self.edge(self.registered(rule, k[2]), site.dst), "k")
            elif name is not None and name in rule.class_keywords:
                self.each(var, lambda c: self.add(site.dst, (self.V("i", c[1]),)), "c")

    def seed_entries(self, obj: int, variable: str) -> None:
        found = self.entry_vars.get(variable)
        if found is None:
            found = self.entry_vars[variable] = self.new_var()
            self.unbudgeted.add(found)
            into = found

            def classes(vals: Iterable[Value]) -> None:
                self.add(into, [self.V("i", v[1]) for v in vals if v[0] == "c"])
            for (module, name), var in sorted(self.ns.items()):
                if name == variable:
                    self.on(var, classes)
                    self.on(self.elements(var, -1), classes)
        self.entry_seeded += 1
        self.mark_assumed(obj, ENTRY_CLASSES)
        self.edge(found, obj)

    # -- rules that need "nothing else was found" ----------------------------------------------
    def seed_self(self) -> None:
        """``self`` of a method no known call reached: instances of its class, or of the subclasses
        of it the program creates (an override in a class never created is no edge)."""
        made_of: dict[int, list[int]] = {}  # class -> the created classes whose MRO holds it
        for var in self.registry_made:
            self.instantiated.update(v[1] for v in self.pts.get(var, ()) if v[0] == "i")
        for k in sorted(self.instantiated):
            for c in self.mro(k):
                made_of.setdefault(c, []).append(k)
        copied = {uid for uid, _ in self.clone_for}
        outside: set[int] = set()  # classes neither they nor a subclass of them the program creates
        unreached: set[int] = set()
        for uid, scope in enumerate(self.scopes):
            if scope.owner < 0 or scope.method not in ("instance", "class") or not scope.params:
                continue
            first = scope.params[0]
            if first.kind not in ("pos", "posonly"):
                continue
            var = first.var + self.scope_base[uid]
            if self.pts.get(var) or uid in copied:  # a copy reached is the method reached (clones.py)
                continue
            owner = self.owner_cid(uid)
            unreached.add(uid)
            made = made_of.get(owner, [])
            tag = "i" if scope.method == "instance" else "c"
            if not made and tag == "i":
                outside.add(owner)
            if tag == "i" and uid in self.clone_code:  # each class its copy (clones.py); the first (the
                for k in made or stand_ins(self, owner):  # owner when no class is made) keeps the method's own variables
                    copy = self.receiver_scope(uid, self.V("i", k), None)
                    self.add(self.scopes[copy].params[0].var + self.scope_base[copy], (self.V("i", k),))
                continue
            self.add(var, [self.V(tag, k) for k in (made or stand_ins(self, owner))])  # an ABC: its concrete subclasses
        seed_inherited(self, outside, unreached)  # their inherited methods too (inherited.py)

    def owner_cid(self, uid: int) -> int:
        return self.scope_cbase[uid] + self.scopes[uid].owner

