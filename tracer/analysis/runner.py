"""Runner side: every call of the setter outside the model classes, whether it
passes ids, and its order against CUDA-graph capture in the runner's start-up.

The start-up order is read by walking the protocol's root methods in source
order, descending into the methods, functions and constructors they call that
resolve inside the tree.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from tracer.checks import finding
from tracer.index.project import Project
from tracer.index.reads import fact
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import CallSite
from tracer.model.summary import Call, Function
from tracer.resolve.binder import HELD, NAME, SELF, SUPER, Binder
from tracer.resolve.resolver import ClassRef, Resolver

_CALLED = re.compile(r"\b(\w+)\s*\(")
MAX_WALK = 4000  # calls visited per root (bounds time on huge runners)
MAX_DEPTH = 12
# the start-up order is walked through methods, super(), held objects and names
_RUNNER_KINDS = frozenset({SELF, SUPER, HELD, NAME})


@dataclass
class _Walk:
    events: list[tuple[str, str, int]]  # ("call", key, line) or ("capture", qualname, line)
    visited: set[str]
    steps: int = 0


class RunnerAnalysis:
    def __init__(self, resolver: Resolver, protocol: Protocol):
        self.resolver = resolver
        self.project = resolver.project
        self.protocol = protocol
        self.binder = Binder(resolver)
        self._reaching: set[str] | None = None

    def _path(self, module: str) -> str:
        source = self.project.by_module.get(module)
        return source.path if source else module

    def call_sites(self, candidate_modules: list[str], model_classes: set[str]) -> list[tuple[str, str, Function, Call]]:
        """(module, owner qualname, function, call) for each setter call outside model classes."""
        proto = self.protocol
        sites = []
        for module in candidate_modules:
            summary = self.project.module(module)
            if summary is None or summary.error:
                continue
            owners: list[tuple[str, Function]] = []
            for name, _, _ in summary.spans():
                text = self.project.function_text(module, name) or ""
                fn = self.project.function(module, name) if proto.setter in text else None
                if fn is not None:
                    owners.append(("", fn))
            for cls in summary.classes:
                if f"{module}.{cls.qualname}" in model_classes:
                    continue
                ref = ClassRef(module, cls.qualname)
                if proto.setter in self.resolver.method_names(ref) and not proto.is_runner_module(module):
                    continue  # a model-like class delegating inside itself
                owners.extend((cls.qualname, m) for m in self.resolver.methods_mentioning(ref, proto.setter))
            for owner, fn in owners:
                for call in fn.calls:
                    if call.func.rpartition(".")[2] == proto.setter and "." in call.func:
                        sites.append((module, owner, fn, call))
        return sites

    def analyse(self, candidate_modules: list[str], model_classes: set[str]) -> tuple[list[CallSite], list[Finding]]:
        proto = self.protocol
        raw = self.call_sites(candidate_modules, model_classes)
        walk = _Walk([], set())
        for root in proto.runner_roots:
            self._walk_root(root, walk)
        order_of: dict[str, int] = {}
        capture_at: int | None = None
        for index, (kind, key, _) in enumerate(walk.events):
            if kind == "call":
                order_of.setdefault(key, index)
            elif kind == "capture" and capture_at is None:
                capture_at = index
        sites: list[CallSite] = []
        findings: list[Finding] = []
        for module, owner, fn, call in raw:
            caller = f"{module}.{fn.qualname}"
            key = f"{caller}:{call.line}"
            passes = call.n_args > 0 or call.star_args
            # setter(model.<default method>()): the model's defaults, never the draft's ids
            default = next((name for name in proto.default_methods
                            if call.args and f"{name}(" in call.args[0]), "")
            if default:
                findings.append(finding(
                    "ids-dropped", "runner-default", protocol=proto.name, file=self._path(module), line=call.line,
                    col=call.col, chain=(caller,), setter=proto.setter, caller=_short(caller), default=default))
            order = order_of.get(key)
            before: bool | None = None
            if order is not None and capture_at is not None:
                before = order < capture_at
            elif order is not None:
                before = True  # reached, and no graph capture is reached at all
            elif owner and self._is_graph_class(owner):
                # Inside a graph runner: compare with its own capture call.
                capture_lines = [c.line for c in fn.calls if self._is_capture_call(
                    c.func, f"{module}.{owner}.{c.func.rpartition('.')[2]}")]
                before = bool(capture_lines) and call.line < min(capture_lines)
            sites.append(CallSite(proto.name, caller, self._path(module), call.line, call.col, passes, before, order,
                                  capture_at is not None))
        sites.sort(key=lambda s: (s.order is None, s.order or 0, s.file, s.line))
        for site in sites:
            if not site.passes_ids:
                when = ""
                if site.before_graph_capture:
                    when = " before CUDA-graph capture, so replayed graphs capture the fallback layers"
                findings.append(finding(
                    "ids-dropped", "runner", protocol=proto.name, file=site.file, line=site.line, col=site.col,
                    chain=(site.caller,), setter=proto.setter, caller=_short(site.caller), when=when,
                    fallback=proto.fallback_description or "its default"))
        with_ids = [s for s in sites if s.passes_ids]
        if capture_at is not None and with_ids and all(s.before_graph_capture is False for s in with_ids):
            for site in with_ids:
                findings.append(finding(
                    "call-order", "", protocol=proto.name, file=site.file, line=site.line, col=site.col,
                    chain=(site.caller,), setter=proto.setter, caller=_short(site.caller)))
        return sites, findings

    # -- the ordered walk --------------------------------------------------------------
    def _reaches(self, func: str) -> bool:
        """Can a call of this name lead to a setter call or a graph capture?

        A text-only fixpoint over the functions of the modules that mention a
        relevant name: a function is relevant when its source mentions one, or
        calls (by name) a relevant function. Calls of other names are not
        walked, which spares parsing most of a runner's start-up code.
        """
        if self._reaching is None:
            self._reaching = self._reaching_names()
        name = func.rpartition(".")[2]
        return name in self._reaching or name == "__init__"

    def _reaching_names(self) -> set[str]:
        relevant = set(self._relevant_names()) | {p.rpartition(".")[2] for p in self.protocol.graph_capture_calls}
        calls_of: dict[str, set[str]] = {}
        for module in self.project.by_module:
            if not self.protocol.in_scope(module):
                continue
            # the runner lives in the pack's runner modules; elsewhere only
            # modules that call the setter can matter
            if not (self.protocol.is_runner_module(module) or self.project.mentions(module, self.protocol.setter)):
                continue
            if not self._relevant(module):
                continue
            for name, names_called in _calls_by_function(self.project, module):
                calls_of.setdefault(name, set()).update(names_called)
        reaching = set(relevant)
        changed = True
        while changed:
            changed = False
            for name, called in calls_of.items():
                if name not in reaching and called & reaching:
                    reaching.add(name)
                    changed = True
        return reaching

    def _relevant(self, module: str) -> bool:
        return any(self.project.mentions(module, name) for name in self._relevant_names())

    def _is_capture_call(self, func: str, qualname: str | None) -> bool:
        name = func.rpartition(".")[2]
        for pattern in self.protocol.graph_capture_calls:
            if "." in pattern:
                if qualname and qualname.endswith(pattern):
                    return True
            elif name == pattern:
                return True
        return False

    def _is_graph_class(self, qualname: str) -> bool:
        name = qualname.rsplit(".", 1)[-1]
        return any(name.endswith(p) for p in self.protocol.graph_capture_classes)

    def _walk_root(self, root: str, walk: _Walk) -> None:
        parts = root.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.project.by_module:
                rest = parts[cut:]
                fn = self.project.function(module, ".".join(rest))
                if fn is not None:
                    cls = ClassRef(module, rest[0]) if len(rest) == 2 else None
                    self._walk_function(module, cls, fn, walk, 0)
                return

    def _walk_function(self, module: str, cls: ClassRef | None, fn: Function, walk: _Walk, depth: int) -> None:
        key = f"{cls.fullname if cls else ''}:{module}.{fn.qualname}"
        if key in walk.visited or depth > MAX_DEPTH:
            return
        walk.visited.add(key)
        for call in fn.calls:
            walk.steps += 1
            if walk.steps > MAX_WALK:
                return
            if call.func.rpartition(".")[2] == self.protocol.setter:
                walk.events.append(("call", f"{module}.{fn.qualname}:{call.line}", call.line))
                continue
            targets = self._resolve_call(module, cls, fn, call)
            if not targets:
                if self._is_capture_call(call.func, None):
                    walk.events.append(("capture", call.func, call.line))
                continue
            for t_module, t_cls, t_fn, qualname in targets:  # every alternative, in order
                before = len(walk.events)
                self._walk_function(t_module, t_cls, t_fn, walk, depth + 1)
                inner_capture = any(kind == "capture" for kind, _, _ in walk.events[before:])
                if not inner_capture and (
                        self._is_capture_call(call.func, qualname)
                        or (t_cls and t_fn.name == "__init__" and self._is_graph_class(t_cls.qualname))):
                    walk.events.append(("capture", qualname, call.line))

    def _resolve_call(self, module: str, cls: ClassRef | None, fn: Function, call: Call):
        """What the call runs (the binder's answer), pruned to what can matter for the order: a call on
        self only when its name can lead to a setter call or a graph capture; elsewhere only into
        modules that mention one. No jedi here: the walk only looks for the setter's call sites, and
        jedi's first question in a 280 KB scheduler cost 0.7 s of a 6.5 s cold scan for no answer."""
        func = call.func
        if not func or (func.startswith("self.") and not self._reaches(func)):
            return []
        targets = []
        for bound in self.binder.callees(module, cls, fn, call, kinds=_RUNNER_KINDS):
            if bound.kind == HELD and not self._relevant(bound.module):
                continue
            if bound.kind == NAME:
                defined = bound.concrete.module if bound.concrete is not None else bound.module
                if not self._relevant(defined) or (bound.concrete is None and not self._reaches(func)):
                    continue
            targets.append((bound.module, bound.concrete, bound.function, bound.qualname))
        return targets

    def _relevant_names(self) -> tuple[str, ...]:
        # "Class.method" patterns contribute the class name: a bare method name
        # such as "capture" is in too many modules to prune anything.
        names = [self.protocol.setter]
        names += [p.split(".")[0] if "." in p else p for p in self.protocol.graph_capture_calls]
        names += list(self.protocol.graph_capture_classes)
        return tuple(names)


def _short(qualname: str) -> str:
    parts = qualname.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else qualname


# module -> ((function name, names it calls), ..., digest of them) per project: the same for
# every protocol's walk
_CALLS: WeakKeyDictionary[Project, dict[str, tuple[tuple[tuple[str, frozenset[str]], ...], str]]] = \
    WeakKeyDictionary()


def _calls_by_function(project: Project, module: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The names each function or method of ``module`` calls (text only), computed once a
    run. A recording learns this answer (a digest of it), not the module's bytes: a walk
    that looked at a model file for the setter's callers is not re-run by an edit that
    leaves the file's calls as they were."""
    calls, digest = _known_calls(project, module)
    project.reads.touch(fact("calls", module, digest))
    return calls


def calls_digest(project: Project, module: str) -> str:
    return _known_calls(project, module)[1]


def _known_calls(project: Project, module: str) -> tuple[tuple[tuple[str, frozenset[str]], ...], str]:
    known = _CALLS.setdefault(project, {})
    if module not in known:
        with project.reads.only_facts():
            calls = _scan_calls(project, module)
        digest = hashlib.sha256(repr(sorted((n, sorted(c)) for n, c in calls)).encode()).hexdigest()[:20]
        known[module] = (calls, digest)
    return known[module]


def _scan_calls(project: Project, module: str) -> tuple[tuple[str, frozenset[str]], ...]:
    found: list[tuple[str, frozenset[str]]] = []
    summary = project.module(module)
    if summary is not None and not summary.error:
        qualnames = [name for name, _, _ in summary.spans()]
        qualnames += [f"{c.qualname}.{name}" for c in summary.classes for name, _, _ in c.spans()]
        for qualname in qualnames:
            text = project.function_text(module, qualname) or ""
            body = text.split("\n", 1)[1] if "\n" in text else ""
            found.append((qualname.rpartition(".")[2], frozenset(_CALLED.findall(body))))
    return tuple(found)
