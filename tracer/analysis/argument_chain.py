"""The chain of a protocol whose ids travel in a forward argument (no setter, no state on the model).

The runner passes a metadata object to the entry's forward as ``<parameter>=``; the
object is a value like the setter's ids: followed through every call that receives
it (by name, by position, or inside ``**kwargs``), into the forward of the module a
call runs (``self.model(...)``, ``layer(...)`` in a loop over ``self.layers``,
``super().forward(...)``, a helper), until some method calls
``<value>.<hook>(...)``: the capture. What the pack names is where the value enters
and the hook; the verdict follows the value, whatever the locals are called.

Only a hook called in the decoder loop (a loop over a ``self`` container) or below it
captures the layers; one outside it (a one-engine wrapper capturing the model's final
output) is a hop of the chain, not a capture of the layers.

Verdicts: the layers' hook is called on some path: ``ok`` (a hook under one branch of a
test that does not look at the value is ``capture-skipped-on-branch``); a call of a
sub-module whose forward takes the value (by name, or in ``**kwargs`` from the decoder
loop) does not pass it: ``broken-delegation``; it is handed down and nothing calls the
hook: ``dead-write`` (at the hand-off to the layers, once their forwards were traced to
the end); handed to a callee whose class is unknown: ``unknown``; the entry's forward
takes no such argument: ``missing``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tracer.analysis.argument_types import ArgumentTypes
from tracer.model.results import Hop, ModelResult
from tracer.resolve.resolver import ClassRef

if TYPE_CHECKING:
    from tracer.analysis.tracing import ChainTracing, Trace

MAX_DEPTH = 10  # calls followed, one inside the other

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Held:
    """How a method holds the value: locals bound to it, or a ``**kwargs`` dict holding it under ``key``."""

    names: frozenset[str]
    kwargs: str = ""
    key: str = ""


@dataclass(frozen=True)
class Site:
    """A call in a method of the chain, with the chain's hops up to that method."""

    concrete: ClassRef
    owner: ClassRef
    method: str
    line: int
    col: int
    source: str  # the call's callee as written
    path: tuple[Hop, ...]
    target: str = ""  # the class.method the call runs
    in_loop: bool = False
    by_name: bool = False  # the callee names the parameter (else it takes **kwargs)
    detail: str = ""


@dataclass
class _Walk:
    hooks: list[Site] = field(default_factory=list)  # captures of the layers (in or below the decoder loop)
    outer_hooks: list[Site] = field(default_factory=list)  # captures outside it (the model's final output)
    drops: list[Site] = field(default_factory=list)
    handoffs: list[tuple[Site, bool]] = field(default_factory=list)  # (call, whether its callee reaches the hook)
    unresolved: list[Site] = field(default_factory=list)
    skipped: list[Site] = field(default_factory=list)  # hook under one branch only
    done: dict[tuple[ClassRef, ClassRef, str, Held, bool], bool] = field(default_factory=dict)


def trace_argument(tracer: ChainTracing, entry: ClassRef, entry_line: int, trace: Trace) -> ModelResult:
    proto = tracer.protocol
    key = proto.argument_parameter
    found = tracer.resolver.find_method(entry, "forward")
    parsed = tracer.flow.function(found[0], "forward") if found else None
    if found is None or parsed is None:
        why = f"{entry.name} has no forward that could be read"
        trace.unresolved.append(why)
        return tracer._result(entry, entry_line, "unknown", why, trace)
    owner, method = found
    held = entry_held(parsed[0], key)
    if held is None:
        trace.findings.append(tracer._finding("missing-setter", "argument", entry, entry.module, entry_line, 0, trace,
                                              param=key))
        return tracer._result(entry, entry_line, "missing", f"{entry.name}'s forward takes no {key}", trace)
    how = "own method" if owner == entry else f"inherited from {owner.name} (MRO)"
    start = Hop("setter", f"{owner.fullname}.forward", tracer._path(owner.module), method.line,
                f"the runner passes {key}= to the entry's forward ({how})")
    walk = _Walk()
    _Visitor(tracer, walk).visit(entry, owner, "forward", held, (start,), 0, False)
    if walk.hooks:
        first = walk.hooks[0]
        trace.hops.extend(first.path)
        trace.hops.append(Hop("read", f"{first.owner.fullname}.{first.method}", tracer._path(first.owner.module),
                              first.line, f"calls {key}.{proto.argument_hook}(...)"))
        for outer in walk.outer_hooks[:1]:
            trace.hops.append(Hop("read", f"{outer.owner.fullname}.{outer.method}", tracer._path(outer.owner.module),
                                  outer.line, f"also calls {key}.{proto.argument_hook}(...) outside the decoder loop "
                                              "(the model's final output)"))
        trace.hops.extend(_output_hops(tracer))
        trace.state_owners.extend(dict.fromkeys(s.concrete for s in walk.hooks))
        trace.written = True
        for site in walk.skipped:
            trace.findings.append(_finding(tracer, "capture-skipped-on-branch", "argument", entry, site, trace,
                                           condition=site.detail, capture_line=site.target))
        return tracer._finish(entry, entry_line, trace)
    trace.hops.extend(start for start in ([start] if not walk.handoffs else _deepest(walk)))
    # a callee that names the parameter, or the decoder loop's layers; with no hand-off at all, any
    # sub-module whose forward could have taken it
    drops = [s for s in walk.drops if s.by_name or s.in_loop] or ([] if walk.handoffs else walk.drops)
    if drops:
        for site in drops:
            trace.findings.append(_finding(tracer, "broken-delegation", "argument", entry, site, trace,
                                           callee=site.source, target=site.target, function=_fn(site),
                                           how=site.detail))
        return tracer._finish(entry, entry_line, trace)
    unreached = [s for s, reached in walk.handoffs if not reached]
    into_layers = [s for s in unreached if s.in_loop]
    # the decoder loop's layers were traced to the end and none captures: what else received the
    # value (a worker built by a factory) cannot capture the layers' states
    proven = [s for s in into_layers if not any(_below(u, s) for u in walk.unresolved)]
    if walk.unresolved and not proven:
        site = walk.unresolved[0]
        trace.unresolved.append(f"cannot follow {key} into {site.source}: {site.detail}")
        trace.findings.append(_finding(tracer, "unresolved", "argument", entry, site, trace, callee=site.source,
                                       why=site.detail, receiver=site.source))
        return tracer._result(entry, entry_line, "unknown", trace.unresolved[0], trace)
    dead = proven or unreached[-1:]
    if dead:
        for site in dead:
            trace.findings.append(_finding(tracer, "dead-write", "hook-uncalled", entry, site, trace,
                                           callee=site.source, target=site.target))
    else:
        site = Site(entry, owner, "forward", method.line, method.col, "forward", (start,), f"{owner.name}.forward")
        trace.findings.append(_finding(tracer, "dead-write", "argument-unused", entry, site, trace))
    return tracer._finish(entry, entry_line, trace)


def entry_held(node: FunctionNode, key: str) -> Held | None:
    """How the entry's forward receives ``key=``: a parameter of that name, else ``**kwargs``."""
    names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    if key in names:
        return Held(frozenset({key}), key=key)
    if node.args.kwarg is not None:
        return Held(frozenset(), node.args.kwarg.arg, key)
    return None


def _below(site: Site, handoff: Site) -> bool:
    """Whether ``site`` lies in what ``handoff``'s callee runs (its hops start with the handoff's)."""
    return site.path[:len(handoff.path)] == handoff.path


def _deepest(walk: _Walk) -> list[Hop]:
    """The hops to the deepest method the value reached."""
    longest = max((s.path for s, _ in walk.handoffs), key=len)
    return list(longest)


def _fn(site: Site) -> str:
    return f"{site.owner.name}.{site.method}"


def _finding(tracer: ChainTracing, slug: str, variant: str, entry: ClassRef, site: Site, trace: Trace,
             **fields: object):
    proto = tracer.protocol
    chain = tuple(h.qualname for h in (*site.path, *trace.hops[len(site.path):]))
    found = tracer._finding(slug, variant, entry, site.owner.module, site.line, site.col, trace,
                            param=proto.argument_parameter, hook=proto.argument_hook, method=_fn(site), **fields)
    from dataclasses import replace
    return replace(found, chain=chain or found.chain)


def _output_hops(tracer: ChainTracing) -> list[Hop]:
    """Where the captured states go: the hook's body on the metadata classes the pack names."""
    proto = tracer.protocol
    hops = []
    for ref in ArgumentTypes(tracer).classes_named(proto.default_classes):
        found = tracer.resolver.find_method(ref, proto.argument_hook)
        if found is not None and found[0] == ref:
            hops.append(Hop("write", f"{ref.fullname}.{proto.argument_hook}", tracer._path(ref.module),
                            found[1].line, f"stores the states of the layers in {ref.name}.{proto.default_field or 'its ids'} "
                                           "for the draft"))
    return hops


class _Visitor:
    def __init__(self, tracer: ChainTracing, walk: _Walk):
        self.tracer = tracer
        self.walk = walk
        self.types = ArgumentTypes(tracer)
        self.hook = tracer.protocol.argument_hook

    def visit(self, concrete: ClassRef, owner: ClassRef, name: str, held: Held, path: tuple[Hop, ...],
              depth: int, in_layers: bool) -> bool:
        """Whether the method (run below the decoder loop when ``in_layers``) captures the layers."""
        memo = (concrete, owner, name, held, in_layers)
        if memo in self.walk.done:
            return self.walk.done[memo]
        self.walk.done[memo] = False  # a cycle reaches nothing new
        parsed = self.tracer.flow.function(owner, name)
        if parsed is None or depth > MAX_DEPTH:
            return False
        node, offset = parsed
        body = _Body(node, held)
        reached = False
        for call in body.calls():
            line = call.lineno + offset
            if body.is_hook(call, self.hook):
                site = Site(concrete, owner, name, line, call.col_offset, self.hook, path)
                if not (in_layers or call in body.in_loop):
                    self.walk.outer_hooks.append(site)
                    continue
                reached = True
                self.walk.hooks.append(site)
                skipped = body.skipping_branch(call, self.hook)
                if skipped is not None:
                    test, at = skipped
                    self.walk.skipped.append(Site(concrete, owner, name, at.lineno + offset, at.col_offset,
                                                  self.hook, path, target=str(line), detail=test))
                continue
            passes = body.passes(call)
            targets, why = self.types.call_targets(concrete, owner, call, body.loop_attrs)
            source = ast.unparse(call.func)
            in_loop = call in body.in_loop
            if passes is not None and not targets and why:
                self.walk.unresolved.append(Site(concrete, owner, name, line, call.col_offset, source, path,
                                                 detail=why))
            for target_cls, target_owner, method in targets:
                callee = self.tracer.flow.function(target_owner, method)
                if callee is None:
                    continue
                label = f"{target_owner.name}.{method}"
                if passes is None:
                    accepts = _accepts(callee[0], held.key)
                    if accepts:
                        self.walk.drops.append(Site(concrete, owner, name, line, call.col_offset, source, path,
                                                    label, in_loop, accepts == "name", body.how_held()))
                    continue
                sub = _bind(callee[0], passes, held.key)
                if sub is None:
                    continue
                hop = Hop("delegate", f"{target_owner.fullname}.{method}", self.tracer._path(target_owner.module),
                          callee[0].lineno + callee[1], f"{source}(...) passes {held.key} ({_how(passes)})",
                          call_file=self.tracer._path(owner.module), call_line=line, passes_ids=True)
                got = self.visit(target_cls, target_owner, method, sub, (*path, hop), depth + 1,
                                 in_layers or in_loop)
                self.walk.handoffs.append((Site(concrete, owner, name, line, call.col_offset, source, (*path, hop),
                                                label, in_loop), got))
                reached = reached or got
        self.walk.done[memo] = reached
        return reached


def _how(passes: tuple[str, object]) -> str:
    kind, value = passes
    return {"position": f"as argument {value}", "keyword": f"as {value}=", "kwargs": f"inside **{value}"}[kind]


def _accepts(node: FunctionNode, key: str) -> str:
    """Whether a callee takes ``key``: "name" (a parameter of that name), "kwargs" or ""."""
    names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    if key in names:
        return "name"
    return "kwargs" if node.args.kwarg is not None else ""


def _bind(node: FunctionNode, passes: tuple[str, object], key: str) -> Held | None:
    """How the callee holds the value it is passed (None: it cannot receive it)."""
    kind, value = passes
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    keyword_names = params + [a.arg for a in node.args.kwonlyargs]
    if kind == "position":
        assert isinstance(value, int)
        return Held(frozenset({params[value]}), key=params[value]) if value < len(params) else None
    keyword = str(value) if kind == "keyword" else key
    if keyword in keyword_names:
        return Held(frozenset({keyword}), key=keyword)
    if node.args.kwarg is not None:
        return Held(frozenset(), node.args.kwarg.arg, keyword)
    return None


class _Body:
    """One method's ast, read for the value: its aliases, the loops over ``self`` containers, the calls."""

    def __init__(self, node: FunctionNode, held: Held):
        self.node = node
        self.held = held
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(node):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent
        self.names = set(held.names)
        assigned: dict[str, list[ast.expr]] = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                assigned.setdefault(sub.targets[0].id, []).append(sub.value)
        for _ in range(3):  # aliases of aliases
            for local, values in assigned.items():
                if any(self._is_value(v) for v in values):
                    self.names.add(local)
        self.loop_attrs: dict[str, set[str]] = {}
        self.in_loop: set[ast.Call] = set()
        for sub in ast.walk(node):
            if not isinstance(sub, (ast.For, ast.AsyncFor)):
                continue
            attrs = _self_attrs(sub.iter, assigned)
            target = sub.target.elts[-1] if isinstance(sub.target, ast.Tuple) and sub.target.elts else sub.target
            if attrs and isinstance(target, ast.Name):
                self.loop_attrs.setdefault(target.id, set()).update(attrs)
                for stmt in sub.body:
                    self.in_loop.update(n for n in ast.walk(stmt) if isinstance(n, ast.Call))

    def _is_value(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        kwargs = self.held.kwargs
        if not kwargs:
            return False
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == kwargs:
            return isinstance(node.slice, ast.Constant) and node.slice.value == self.held.key
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == kwargs and node.args:
            first = node.args[0]
            return isinstance(first, ast.Constant) and first.value == self.held.key
        return False

    def how_held(self) -> str:
        if self.names:
            return f"as {', '.join(sorted(self.names))}"
        return f"inside **{self.held.kwargs}"

    def calls(self) -> list[ast.Call]:
        found = [n for n in ast.walk(self.node) if isinstance(n, ast.Call)]
        return sorted(found, key=lambda c: (c.lineno, c.col_offset))

    def is_hook(self, call: ast.Call, hook: str) -> bool:
        func = call.func
        return isinstance(func, ast.Attribute) and func.attr == hook and self._is_value(func.value)

    def passes(self, call: ast.Call) -> tuple[str, object] | None:
        """How the call hands the value on: ("position", i), ("keyword", name) or ("kwargs", dict name)."""
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if self._is_value(arg):
                return "position", index
        for keyword in call.keywords:
            if keyword.arg is not None and self._is_value(keyword.value):
                return "keyword", keyword.arg
            if keyword.arg is None and isinstance(keyword.value, ast.Name) and self.held.kwargs \
                    and keyword.value.id == self.held.kwargs:
                return "kwargs", self.held.kwargs
        return None

    def mentions_value(self, node: ast.AST) -> bool:
        return any(isinstance(n, ast.expr) and self._is_value(n) for n in ast.walk(node))

    def skipping_branch(self, call: ast.Call, hook: str) -> tuple[str, ast.If] | None:
        """The innermost ``if`` around the hook whose test does not look at the value and whose other
        branch calls no hook (and is not switched off where the layer captures: ``<test> = False``)."""
        child: ast.AST = call
        parent = self.parents.get(call)
        while parent is not None and parent is not self.node:
            if isinstance(parent, ast.If) and not self.mentions_value(parent.test):
                in_body = any(child is s for s in parent.body)
                other = parent.orelse if in_body else parent.body
                calls_hook = any(isinstance(n, ast.Call) and self.is_hook(n, hook)
                                 for s in other for n in ast.walk(s))
                exits = any(isinstance(s, (ast.Return, ast.Raise)) for s in other)
                if not calls_hook and not exits and not self._switched_off(parent.test):
                    test = ast.unparse(parent.test)
                    return (test if not in_body else f"not ({test})"), parent
            child, parent = parent, self.parents.get(parent)
        return None

    def _switched_off(self, test: ast.expr) -> bool:
        """``<test> = False`` somewhere in the method (the fused path is turned off for a capturing layer)."""
        source = ast.unparse(test)
        for sub in ast.walk(self.node):
            if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Constant) and sub.value.value is False \
                    and any(ast.unparse(t) == source for t in sub.targets):
                return True
        return False


def _self_attrs(node: ast.expr, assigned: dict[str, list[ast.expr]], depth: int = 0) -> set[str]:
    """``self.X`` containers an iterable reads (``self.layers``, ``self.layers[:n]``, ``enumerate(...)``,
    a local assigned from them)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
            found.add(sub.attr)
        elif isinstance(sub, ast.Name) and sub.id in assigned and depth < 3:
            for value in assigned[sub.id]:
                found |= _self_attrs(value, assigned, depth + 1)
    return found


__all__ = ["Held", "Site", "entry_held", "trace_argument"]
