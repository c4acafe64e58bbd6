"""Small readers solved apart per argument value (bounded context sensitivity): a mixin of the solver.

A small function returning what it reads out of one of its parameters (``def get(table, key):
return table[key]``, ``def first(x): return x.attr``, ``getattr(obj, name)``, ``t.get(k)``) is, in
one context-insensitive solve, one set of variables for all its callers: every caller's table
meets in the parameter and every caller receives what every table holds (and calls it). Here the
call's argument for that parameter is split by value: the first value (a container, an instance,
a class or a module) keeps the function's own variables, each further value (at most
``MAX_ARG_CLONES`` per function) gets a copy of the function's instructions (clones.make_clone)
that only it and the rest of that call's arguments fill, and that call site receives only that
copy's result; values beyond the cap, and values of other kinds, use the function's own
variables, as before. Edges of a copy are the function's own (the graph's node is its source).

Only functions of at most ``MAX_ARG_INSTRS`` instructions, with no nested function, no generator,
whose parameter is only read (never stored, copied out, nor passed to a call but ``getattr``'s
object) are split: a parameter kept somewhere meets the other callers' values there anyway.
Counted: ``stats.functions_cloned_per_argument`` (copies made) and ``stats.arg_clones_refused``.
Measured on sglang 0.5.23 srt: 232 copies (3,069 refused), 77,212 -> 77,070 edges (-142, e.g.
dumper._materialize_value no longer calling every all-reduce op), 54 CPU-s, 770 MiB peak (main 71-87, 788).
"""

from __future__ import annotations

import bisect
import marshal
from collections.abc import Callable
from typing import Any, NamedTuple

from tracer.callgraph.calls import Site
from tracer.callgraph.heap import Value
from tracer.callgraph.ir import ModuleIR, ScopeIR

MAX_ARG_CLONES = 3  # argument values beyond the first a function is solved apart for
MAX_ARG_INSTRS = 64  # instructions of a function that may be split
SPLIT_KINDS = frozenset("oicm")  # a container, an instance, a class, a module: what a read reads out of
READER_METHODS = frozenset({"get", "pop", "setdefault", "__getitem__"})
# builtins a parameter may be given to without being kept (the checks around a read)
LOOKING = frozenset({"getattr", "isinstance", "issubclass", "len", "hasattr", "callable", "type", "id", "repr",
                     "str", "bool"})


class Code(NamedTuple):  # a copyable function's code (here, not in clones.py, which imports this module)
    module: str
    base: int  # the module's first variable
    sbase: int  # its first scope
    cbase: int  # its first class
    instrs: bytes  # the method's instructions and the closure copies into its variables (marshalled)
    sites: tuple[int, ...]  # the solver's site id of each call instruction among them, in order
    span: tuple[int, ...]  # (first instruction, end, first var, end var, end scope), module-local
    shared: frozenset[int]  # module-local vars of the span that stay shared (written from outside it)


def read_param(scope: ScopeIR, body: list[Any], getattrs: set[int], looking: set[int]) -> int:
    """The index of the parameter ``scope`` returns a read of (and only reads), or -1."""
    skip = 1 if scope.method in ("instance", "class") else 0  # the receiver: clones.py's
    v0, v1 = scope.span[2], scope.span[3]
    back = {scope.ret}  # what flows (by copies) into the returned value
    for _ in range(4):
        for ins in body:
            if ins[0] == "copy" and ins[1] in back:
                back.add(ins[2])
    for i, p in enumerate(scope.params):
        if i < skip or p.kind not in ("pos", "posonly", "kw"):
            continue
        derived = {p.var}
        for _ in range(4):
            for ins in body:
                if ins[0] in ("copy", "isa") and ins[2] in derived or ins[0] == "narrow" and derived.intersection(ins[2]):
                    derived.add(ins[1])
        if _reads(body, derived, back, getattrs, looking, v0, v1):
            return i
    return -1


def _reads(body: list[Any], derived: set[int], back: set[int], getattrs: set[int], looking: set[int], v0: int,
           v1: int) -> bool:
    readers: set[int] = set()  # p.get and the like: a call of one is a read
    found = False
    for ins in body:
        op = ins[0]
        if op == "copy" and ins[2] in derived and not v0 <= ins[1] < v1:
            return False  # copied out of the function (a global, a closure's variable)
        if op in ("setattr", "setitem") and ins[3] in derived:
            return False  # stored
        if op == "attr" and ins[2] in derived:
            found |= ins[1] in back
            if ins[3] in READER_METHODS:
                readers.add(ins[1])
        elif op == "item" and ins[2] in derived:
            found |= ins[1] in back
        elif op == "call":
            args = [a for a, _ in ins[3]] + [a for _, a in ins[4]]
            read = bool(args) and (ins[2] in readers or ins[2] in getattrs and ins[3] and ins[3][0][0] in derived)
            if read:
                found |= ins[1] in back
                args = args[1:] if ins[2] in getattrs else args
            if ins[2] not in looking and any(a in derived for a in args):
                return False  # passed on: kept or not, the callee's business
    return found


class ArgClones:
    scopes: list[ScopeIR]
    clone_code: dict[int, Any]
    next_site: int
    assumed_sites: dict[int, str]
    site_context: dict[int, Any]
    clones_made: int
    # provided by the solver
    make_clone: Callable[[int, Any], int]
    invoke: Callable[[Site, int, Value | None], None]
    on: Callable[[int, Any], None]
    add: Callable[..., None]
    new_var: Callable[[], int]
    when_empty: Callable[..., None]

    def init_argclones(self) -> None:
        self.arg_code: dict[int, tuple[int, Any]] = {}  # function uid -> (its split parameter, its code)
        self.arg_first: dict[int, Value] = {}  # function uid -> the value using its own variables
        self.arg_for: dict[tuple[int, Value], int] = {}  # (function uid, value) -> the copy's uid
        self.arg_count: dict[int, int] = {}
        self.split_sites: set[int] = set()  # the sites a split call makes (bound as they come)
        self.arg_clones_made = 0
        self.arg_clones_refused = 0

    def keep_arg_code(self, m: ModuleIR, instrs: list[Any], base: int, sbase: int, cbase: int,
                      first_site: int) -> None:
        """Keep the code of ``m``'s small outermost functions returning a read of a parameter."""
        looking = {ins[1] for ins in instrs if ins[0] == "glob" and ins[2] in LOOKING}
        getattrs = {ins[1] for ins in instrs if ins[0] == "glob" and ins[2] == "getattr"}
        calls: list[int] | None = None
        end = -1
        for i, s in enumerate(m.scopes):
            span = s.span
            if not span or span[0] < end:
                continue
            end = span[1]
            if span[1] - span[0] > MAX_ARG_INSTRS or span[4] != i + 1 or s.yields >= 0 or s.ret < 0:
                continue
            body = instrs[span[0]:span[1]]
            k = read_param(s, body, getattrs, looking)
            if k < 0:
                continue
            if calls is None:
                calls = [j for j, ins in enumerate(instrs) if ins[0] == "call"]
            lo, hi = bisect.bisect_left(calls, span[0]), bisect.bisect_left(calls, span[1])
            # variables of the span written from outside it (a closure's) stay shared, as in clones.py
            shared = {ins[1] for j, ins in enumerate(instrs) if ins[0] == "copy" and span[2] <= ins[1] < span[3]
                      and not span[0] <= j < span[1]} | {v for _, v in m.globals if span[2] <= v < span[3]}
            self.arg_code[sbase + i] = (k, Code(m.module, base, sbase, cbase, marshal.dumps(body),
                                                tuple(first_site + j for j in range(lo, hi)), span, frozenset(shared)))

    def split_args(self, site: Site, uid: int, recv: Value | None) -> bool:
        """Hook of Calls.invoke: the call bound value by value of the split parameter's argument
        (True), or as one (False: no split function, the argument not given plainly, no result used)."""
        entry = self.arg_code.get(uid)
        if entry is None or site.dst < 0 or site.id in self.split_sites:
            return False
        k = entry[0]
        params = self.scopes[uid].params
        positional = [i for i, p in enumerate(params) if p.kind in ("pos", "posonly")]
        at, name = -1, ""
        if k in positional:
            at = positional.index(k) - (1 if recv is not None else 0)
        if 0 <= at < len(site.args) and not any(st for _, st in site.args[:at + 1]):
            var = site.args[at][0]
        else:
            at, name = -1, params[k].name
            var = next((v for n, v in site.kwargs if n == name), -1)
            if var < 0 or any(st for _, st in site.args):
                return False
        self.on(var, ("", ArgClones.split_value, site, uid, recv, at, name))
        # no value: the other arguments bound, and no result (the function's own is every other call's)
        self.when_empty(var, (ArgClones.bind_one, site._replace(dst=-1), uid, uid, recv))
        return True

    def split_value(self, v: Value, site: Site, uid: int, recv: Value | None, at: int, name: str) -> None:
        key = (uid, v)
        target = self.arg_for.get(key)
        if target is None:
            first = self.arg_first.setdefault(uid, v)
            target = self.arg_for[key] = uid  # while it is made: a call of it with v inside uses uid
            if v[0] in SPLIT_KINDS and v != first:
                if self.arg_count.get(uid, 0) >= MAX_ARG_CLONES:
                    self.arg_clones_refused += 1
                else:
                    self.arg_count[uid] = self.arg_count.get(uid, 0) + 1
                    target = self.arg_for[key] = self.make_arg_clone(uid)
        one = self.new_var()
        self.add(one, (v,))
        if at >= 0:
            args = (*site.args[:at], (one, False), *site.args[at + 1:])
            site = site._replace(args=args)
        else:
            site = site._replace(kwargs=tuple((n, one if n == name else a) for n, a in site.kwargs))
        ArgClones.bind_one(self, site, uid, target, recv)

    def bind_one(self, site: Site, uid: int, target: int, recv: Value | None) -> None:
        self.next_site += 1
        split = site._replace(id=self.next_site)
        self.split_sites.add(split.id)
        why = self.assumed_sites.get(site.id)
        if why:  # made through a seeded receiver: so is each part
            self.assumed_sites[split.id] = why
        self.invoke(split, target, recv)

    def make_arg_clone(self, uid: int) -> int:
        """A copy of ``uid`` (clones.make_clone), its calls bound as the function's own are (no
        receiver context: a function it calls is not copied with it)."""
        kept, contexts = self.clone_code.get(uid), self.site_context
        self.clone_code[uid] = self.arg_code[uid][1]
        self.site_context = _NoContext()
        try:
            made = self.make_clone(uid, None)
        finally:
            self.site_context = contexts
            if kept is None:
                del self.clone_code[uid]
            else:
                self.clone_code[uid] = kept
        self.clones_made -= 1  # counted as a copy per argument, not per receiver
        self.arg_clones_made += 1
        return made


class _NoContext(dict):  # type: ignore[type-arg]
    """``site_context`` while a function is copied per argument: its sites get no receiver context."""

    def __setitem__(self, key: Any, value: Any) -> None:
        return
