"""Methods solved apart per receiver class (1-object sensitivity, bounded): a mixin of the solver.

A base class's small method called on instances of several classes (``Parser.register`` on a
block parser and on an inline parser, each storing a lambda over ``self`` and the function it is
given) is, in one context-insensitive solve, one set of variables for all of them: every
receiver, every argument and every container the method allocates on ``self`` meet there, and
each function registered on one parser is called with the other parser and its states. Here the
first receiver class a method is called on keeps the method's own variables; each further
receiver class (at most ``MAX_CLONES`` per method) gets a copy of the method's instructions with
its locals, parameters, nested lambdas and functions, and the containers it allocates, renamed
apart. A function or static method called from a copy gets its copy for the same receiver class
(``self.insert_rule(self.rules, name)``: each parser's own rule list), and ``self`` of a method no
call reached, seeded with the classes created, is seeded class by class into their copies. Calls
made in a copy are edges of the method itself (the graph's node is the function's source); a copy's
call site counts as bound when the method's own site is reported. An object kept apart by its
allocation site (objects.py) is a receiver of its own: a copy per object (at most
``objects.MAX_OBJECT_CLONES`` per method), never the method's own variables, which its class's
instance (standing for any object of the class) uses.

Only functions and methods of at most ``MAX_CLONE_INSTRS`` instructions are copied (dispatchers,
registrars, initialisers: where receivers meet and flow on; a large method is mostly its own
logic), and only their code is kept past installation (marshalled: ~20 bytes an instruction). Counted: ``stats.methods_cloned_per_receiver``
(copies made) and ``stats.clones_refused`` (receivers beyond the cap, solved in the method's own
variables as before).
"""

from __future__ import annotations

import bisect
import marshal
from collections.abc import Callable
from typing import Any, NamedTuple

from tracer.callgraph.argclones import ArgClones, Code
from tracer.callgraph.calls import Site
from tracer.callgraph.heap import Value
from tracer.callgraph.ir import ModuleIR, ScopeIR
from tracer.callgraph.objects import MAX_OBJECT_CLONES, init_objects

# bounds: on sglang/srt 0.5.23, 3 and 32 make ~5,000 copies (4,300 refused), +5% peak memory, +1% CPU;
# 4 and 80 made ~8,300 (+13% memory): the copies' own containers and lambdas then filled shared
# variables to the value budget (stats.values_cut 45k -> 62k) and cut values other calls needed
MAX_CLONES = 3  # receiver classes beyond the first one method is solved apart for
MAX_CLONE_INSTRS = 32  # instructions of a method that may be copied. The edges these copies once "lost"
# (examples/ok's LlamaForCausalLM.forward -> LlamaModel.forward, five TensorRT-LLM rows) were made only by the
# merge they undo: the base's own abstract instance held every subclass's model; they rest now on the
# classes only the outside creates running their inherited methods (inherited.py), on the owner taking a
# method's own variables when self is seeded (seeds.seed_self), and on a copy's parameters being typed
# like the method's (seeds.note_params)

# the operands of each instruction that are variables (the rest are names, lines, scopes, classes)
VAR_OPERANDS = {
    "copy": (1, 2), "func": (1,), "class": (1,), "const": (1,), "glob": (1,), "import": (1,), "from": (1,),
    "attr": (1, 2), "setattr": (1, 3), "item": (1, 2, 3), "setitem": (1, 2, 3), "alloc": (1,), "merge": (1, 2),
    "decorate": (1, 2, 3), "super": (1, 3, 4), "iter": (1, 2), "aiter": (1, 2), "dunder": (1, 2),
    "unpack": (1, 2), "star_unpack": (1, 2), "raise": (1,), "instance": (1, 2), "binop": (1, 2, 3), "narrow": (1,),
    "isa": (1, 2), "slice": (1, 2),
}
SCOPE_OPERAND = {"attr": 4, "setattr": 4, "item": 4, "setitem": 4, "decorate": 4, "iter": 3, "aiter": 3,
                 "dunder": 5, "raise": 2, "call": 5, "slice": 3}
VAR_TUPLE = {"dunder": 4, "narrow": 2, "isa": 3}  # an operand that is a tuple of variables


class _Identity:
    """``Solver.ints`` while a copy is installed: its operands are already the solver's numbers."""

    def __getitem__(self, v: int) -> int:
        return v

    def __len__(self) -> int:
        return 1 << 62


IDENTITY = _Identity()


class _Module(NamedTuple):
    module: str
    is_package: bool = False  # a copied function's own `from .sub import x` binds no submodule name


class Clones(ArgClones):
    scopes: list[ScopeIR]
    scope_base: list[int]
    scope_module: list[str]
    scope_cbase: list[int]
    next_var: int
    next_site: int
    ints: Any
    pts: Any  # the per-variable lists (valuesets.VarMap)
    succ: Any
    watch: Any
    # provided by the solver
    add: Callable[[int, Any], None]
    new_obj: Callable[..., Value]
    install: Callable[[Any, int, int, int, tuple[Any, ...]], None]
    note_call: Callable[[int, int], None]
    call_on: Callable[[int, Site], None]
    add_edge: Callable[..., None]
    note_params: Callable[[int], None]  # seeds.Seeds
    object_count: dict[int, int]  # objects.init_objects

    def init_clones(self) -> None:
        self.clone_code: dict[int, Code] = {}  # method uid -> its code (small instance methods only)
        self.clone_first: dict[int, Any] = {}  # method uid -> the receiver class (or object) using its own variables
        self.clone_for: dict[tuple[int, Any], int] = {}  # (method uid, receiver class or object) -> the copy's uid
        self.clone_count: dict[tuple[int, bool], int] = {}  # (method uid, per object) -> copies made
        self.clone_origin: dict[int, int] = {}  # a copy's scope uid -> the scope it copies
        self.site_clones: dict[int, list[int]] = {}  # a call site -> the sites of its copies
        self.site_context: dict[int, Any] = {}  # a copy's call site -> the receiver class (or object) of its copy
        self.clones_made = 0
        self.clones_refused = 0
        init_objects(self)
        self.init_argclones()

    def keep_clone_code(self, m: ModuleIR, instrs: list[Any], base: int, sbase: int, cbase: int,
                        first_site: int) -> None:
        """Keep the code of ``m``'s small instance methods (outermost ones) for copies."""
        self.keep_arg_code(m, instrs, base, sbase, cbase, first_site)  # and of its readers (argclones.py)
        spans: list[tuple[int, tuple[int, ...]]] = []
        end = -1
        for i, s in enumerate(m.scopes):
            span = s.span
            if not span or span[0] < end:
                continue
            end = span[1]
            if span[1] - span[0] <= MAX_CLONE_INSTRS:
                spans.append((i, span))
        if not spans:
            return
        starts = [span[2] for _, span in spans]
        extras: list[list[Any]] = [[] for _ in spans]
        shared: list[set[int]] = [set() for _ in spans]
        for i, ins in enumerate(instrs):  # closures' copies into a method's variables come at the module's end
            if ins[0] != "copy":
                continue
            k = bisect.bisect_right(starts, ins[1]) - 1
            if k < 0:
                continue
            span = spans[k][1]
            if span[2] <= ins[1] < span[3] and not span[0] <= i < span[1]:
                if span[2] <= ins[2] < span[3]:
                    extras[k].append(ins)
                else:
                    shared[k].add(ins[1])
        names = {var for _, var in m.globals}
        calls = [i for i, ins in enumerate(instrs) if ins[0] == "call"]
        for k, (i, span) in enumerate(spans):
            lo, hi = bisect.bisect_left(calls, span[0]), bisect.bisect_left(calls, span[1])
            self.clone_code[sbase + i] = Code(
                m.module, base, sbase, cbase, marshal.dumps([*instrs[span[0]:span[1]], *extras[k]]),
                tuple(first_site + j for j in range(lo, hi)), span,
                frozenset(shared[k] | {v for v in names if span[2] <= v < span[3]}))

    def receiver_scope(self, uid: int, recv: Value | None, site: Site | None) -> int:
        """The edge of a call of ``uid`` (a copy's is the function's own), and the scope it runs: its
        own, or its copy for the receiver's class (a method), or for the receiver class of the copy
        making the call (a function or static method called from a method's copy:
        ``self.insert_rule(self.rules, name)``)."""
        if site is not None:
            self.add_edge(site, self.clone_origin.get(uid, uid))
        if uid not in self.clone_code:
            return uid
        if recv is not None and recv[0] == "i" and self.scopes[uid].method == "instance":
            cid = recv[1]
            ctx: Any = cid
            if len(recv) > 2:  # an object of its allocation site (objects.py): never the method's own variables,
                ctx = recv  # which its class's instance (any object of the class) reads through
            elif cid == self.clone_first.setdefault(uid, cid) or cid == self.scope_cbase[uid] + self.scopes[uid].owner:
                return uid
        elif recv is None and site is not None and site.id in self.site_context:
            ctx = self.site_context[site.id]
        else:
            return uid
        found = self.clone_for.get((uid, ctx))
        if found is None:
            count = (uid, ctx.__class__ is tuple)  # copies per object counted apart from those per class
            if self.clone_count.get(count, 0) >= (MAX_OBJECT_CLONES if count[1] else MAX_CLONES):
                self.clones_refused += 1
                found = uid
            else:
                self.clone_count[count] = self.clone_count.get(count, 0) + 1
                found = self.make_clone(uid, ctx)
            self.clone_for[(uid, ctx)] = found
        return found

    def make_clone(self, uid: int, context: Any) -> int:
        code = self.clone_code[uid]
        i0, _i1, v0, v1, s1 = code.span
        fresh = self.next_var - v0
        self.next_var += v1 - v0
        for per_var in (self.pts, self.succ, self.watch):  # lists indexed by variable (ValueSets)
            per_var.extend([None] * (v1 - v0))
        base, shared = code.base, code.shared

        def var(v: int) -> int:
            if v < 0:
                return -1
            return v + fresh if v0 <= v < v1 and v not in shared else v + base
        local = uid - code.sbase
        uids: dict[int, int] = {}
        for j in range(local, s1):  # the method and what is nested in it
            s = self.scopes[code.sbase + j]
            uids[j] = new = len(self.scopes)
            self.scopes.append(s.__class__(
                s.name, s.kind, s.line, tuple(p.__class__(p.name, var(p.var), p.kind) for p in s.params),
                var(s.ret), var(s.yields), s.passthrough, s.owner, s.method))
            self.scope_base.append(0)
            self.scope_module.append(code.module)
            self.scope_cbase.append(code.cbase)
            self.clone_origin[new] = code.sbase + j
            self.note_params(new)  # a copy's parameters are parameters too (seeds.py types those no call fills)
            for p in s.params:
                if p.kind in ("star", "dstar"):
                    oid = ("star" if p.kind == "star" else "dstar", new)
                    self.add(var(p.var), (self.new_obj(oid, "tuple" if p.kind == "star" else "dict"),))
        self.clones_made += 1
        module, sites = _Module(code.module), iter(code.sites)
        ints, self.ints = self.ints, IDENTITY
        try:
            for ins in marshal.loads(code.instrs):
                op = ins[0]
                out = list(ins)
                if op == "call":
                    self.clone_call(ins, var, code.sbase, next(sites), context)
                    continue
                for at in VAR_OPERANDS.get(op, ()):
                    if at < len(out):
                        out[at] = var(out[at])
                if op in VAR_TUPLE:
                    out[VAR_TUPLE[op]] = tuple(var(a) for a in out[VAR_TUPLE[op]])
                if op == "func":
                    out[2] = uids.get(out[2], code.sbase + out[2])
                at = SCOPE_OPERAND.get(op, -1)
                if 0 <= at < len(out):
                    out[at] = code.sbase + out[at]  # calls made in a copy are the method's own
                self.install(module, 0, 0, code.cbase, tuple(out))
        finally:
            self.ints = ints
        return uids[local]

    def clone_call(self, ins: tuple[Any, ...], var: Any, sbase: int, origin: int, context: Any) -> None:
        self.next_site += 1
        site = Site(self.next_site, var(ins[1]), tuple((var(a), s) for a, s in ins[3]),
                    tuple((k, var(a)) for k, a in ins[4]), sbase + ins[5], ins[6], ins[7], ins[8])
        self.site_clones.setdefault(origin, []).append(site.id)
        self.site_context[site.id] = context
        fn = var(ins[2])
        self.note_call(fn, site.id)
        self.call_on(fn, site)

