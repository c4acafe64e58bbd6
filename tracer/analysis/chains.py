"""Chains stage: for one entry class and one protocol, the hops the layer ids take
from the entry's setter to the attribute that stores them and the forward that reads
it, and the findings on the way.

The ids are followed as a value (flow.py): through every call that receives them,
whatever the callee's name, into whatever attribute stores them. The pack's names
are hints: the setter the runner calls (where the chain starts), the usual state
attribute (for messages and spelling checks), the output flag, the carriers that
must be given the ids. A state counts as read only when the forward that runs for its
owner reaches a read (readers.py).
"""

from __future__ import annotations

import difflib

from tracer.analysis.argument_chain import trace_argument
from tracer.analysis.config_chain import trace_config
from tracer.analysis.config_source import ConfigSources
from tracer.analysis.flow import Call, Flow, FlowAnalysis, Ids, Problem, Values, Write
from tracer.analysis.handoff import dropped_aux
from tracer.analysis.readers import readers_of, unreached_readers
from tracer.analysis.tracing import Trace
from tracer.checks import finding, is_error, on_draft_head
from tracer.model.findings import Finding
from tracer.model.kinds import Verdict
from tracer.model.protocol import Protocol
from tracer.model.results import Hop, ModelResult, TagSite
from tracer.model.summary import Function
from tracer.resolve.resolver import ClassRef, Resolver


class ChainTracer:
    def __init__(self, resolver: Resolver, protocol: Protocol, drafts: frozenset[str] = frozenset()):
        self.resolver = resolver
        self.project = resolver.project
        self.protocol = protocol
        self.drafts = drafts  # full names of the draft heads a registry names as such
        hints = dict(h.split("=", 1) for h in protocol.method_values if "=" in h)
        # a config-carried protocol's "setter" is the constructor: no call carries the ids by name
        carriers = {*protocol.delegate_methods} | (set() if protocol.config_attribute else {protocol.setter})
        self.flow = FlowAnalysis(resolver, carriers, hints, self._path)
        self.sources = ConfigSources(resolver, protocol, self.flow) if protocol.config_attribute else None

    def _path(self, module: str) -> str:
        source = self.project.by_module.get(module)
        return source.path if source else module.replace(".", "/") + ".py"

    def _finding(self, slug: str, variant: str, entry: ClassRef, module: str, line: int, col: int,
                 trace: Trace, **fields: object) -> Finding:
        proto = self.protocol
        return finding(slug, variant, protocol=proto.name, entry=entry.fullname, file=self._path(module),
                       line=line, col=col, chain=tuple(h.qualname for h in trace.hops), setter=proto.setter,
                       entry_name=entry.name, attribute=proto.state_attribute, **fields)

    # -- the entry -------------------------------------------------------------------------------
    def trace(self, entry: ClassRef) -> ModelResult:
        proto = self.protocol
        entry_def = self.resolver.class_def(entry)
        entry_line = entry_def.line if entry_def else 0
        trace = Trace()
        if self.sources is not None:
            return trace_config(self, self.sources, entry, entry_line, trace)
        if proto.argument_parameter:
            return trace_argument(self, entry, entry_line, trace)
        found = self.resolver.find_method(entry, proto.setter)
        classes, mro_problems = self.resolver.mro(entry)
        if found is None:
            if mro_problems:
                reason = f"no {proto.setter} found, but the MRO is incomplete: {mro_problems[0]}"
                trace.findings.append(self._finding("unresolved", "mro", entry, entry.module, entry_line, 0, trace,
                                                    why=mro_problems[0]))
                return self._result(entry, entry_line, "unknown", reason, trace)
            trace.findings.append(self._finding("missing-setter", "", entry, entry.module, entry_line, 0, trace))
            return self._result(entry, entry_line, "missing", f"no {proto.setter} in the MRO of {entry.name}", trace)
        if proto.capability_bases and not mro_problems:
            names = {c.name for c in classes}
            if not names & set(proto.capability_bases):
                trace.findings.append(self._finding("missing-setter", "undeclared", entry, entry.module, entry_line, 0,
                                                    trace, bases=" or ".join(proto.capability_bases)))
                return self._result(entry, entry_line, "missing",
                                    f"{entry.name} has {proto.setter} but does not declare "
                                    f"{' or '.join(proto.capability_bases)}, so the runner refuses it", trace)
        owner, method = found
        self._check_shadowed(entry, owner, trace)
        how = "own method" if owner == entry else f"inherited from {owner.name} (MRO)"
        trace.hops.append(Hop("setter", f"{owner.fullname}.{proto.setter}", self._path(owner.module), method.line, how))
        ids_param = self._ids_param(method)
        args: list[Values] = [(Ids("the ids"),)] if ids_param else []
        flow = self.flow.run(owner, entry, proto.setter, args)
        if flow is None:
            why = f"{owner.name}.{proto.setter}: its source could not be read"
            trace.unresolved.append(why)
            return self._result(entry, entry_line, "unknown", why, trace)
        self._walk(entry, flow, method, trace, depth=0)
        self._states(entry, trace)
        self._check_flag(entry, trace)
        self._check_handoff(entry, trace)
        self._check_defaults(entry, trace)
        return self._finish(entry, entry_line, trace)

    def _check_shadowed(self, entry: ClassRef, owner: ClassRef, trace: Trace) -> None:
        """A class body that defines the setter twice: the later one runs (Python's rule)."""
        definition = self.resolver.class_def(owner)
        if definition is None:
            return
        lines = [start for name, start, _ in definition.method_spans if name == self.protocol.setter]
        if len(lines) > 1:
            first, last = lines[0], lines[-1]
            rows = (self.resolver.project.text(owner.module) or "").split("\n")
            row = rows[first - 1] if 0 < first <= len(rows) else ""
            trace.findings.append(self._finding(
                "shadowed-setter", "", entry, owner.module, first, len(row) - len(row.lstrip()), trace,
                owner_name=owner.name,
                first=first, last=last, count=len(lines)))

    def _ids_param(self, method: Function) -> str:
        names = [p.name for p in method.params if p.name not in ("self", "cls")]
        if self.protocol.ids_parameter in names:
            return self.protocol.ids_parameter
        return names[0] if names else ""

    # -- one method of the chain -------------------------------------------------------------------
    def _walk(self, entry: ClassRef, flow: Flow, method: Function, trace: Trace, depth: int) -> None:
        proto = self.protocol
        owner, concrete = flow.owner, flow.concrete
        trace.nodes.append((concrete, owner, method, flow))
        self._summary_checks(entry, concrete, owner, method, trace)
        states = [w for w in flow.writes if w.tainted]
        state_targets = list(dict.fromkeys(w.target for w in states))
        # The hop names the first write (in source order) of each attribute the ids reach:
        # a fallback branch that stores defaults writes the same state.
        for target in state_targets:
            first = next(w for w in flow.writes if w.target == target)
            self._write_hop(entry, owner, first, trace)
        if not states and proto.state_attribute and not _stores_ids_below(flow):
            # (a helper the ids are handed to that stores them is the setter's write: not ignored)
            plain = [w for w in flow.writes if w.attr == proto.state_attribute]
            if plain:
                # the state, but stored from something other than the ids: the setter ignores them
                self._write_hop(entry, owner, plain[0], trace)
                trace.findings.append(self._finding(
                    "ids-dropped", "ignored", entry, owner.module, plain[0].line, plain[0].col, trace,
                    owner_name=owner.name, method=flow.method, target=plain[0].target))
        for problem in flow.problems:
            self._problem(entry, owner, problem, trace)
        for call in flow.calls:
            self._call(entry, owner, flow, call, trace, depth)

    def _call(self, entry: ClassRef, owner: ClassRef, flow: Flow, call: Call, trace: Trace, depth: int) -> None:
        proto = self.protocol
        caller = self.resolver.method(flow.owner, flow.method)
        if (not call.passes_ids and caller is not None and self._ids_param(caller)
                and call.method in (proto.setter, *proto.delegate_methods)):
            trace.findings.append(self._finding(
                "ids-dropped", "hop", entry, owner.module, call.line, call.col, trace, owner_name=owner.name,
                method=flow.method, callee=call.source, ids_param=self._ids_name(flow),
                fallback=proto.fallback_description))
        if call.flow is None or not self._matters(call.flow):
            return
        key = (call.concrete, f"{call.owner.fullname}.{call.method}")
        if key in trace.done:
            return  # the same method reached from another branch: one hop is enough
        trace.done.add(key)
        method = self.resolver.method(call.owner, call.method)
        if method is None:
            return
        trace.hops.append(Hop("delegate", f"{call.owner.fullname}.{call.method}", self._path(call.owner.module),
                              method.line, call.how, self._path(owner.module), call.line, call.passes_ids))
        self._walk(entry, call.flow, method, trace, depth + 1)

    def _ids_name(self, flow: Flow) -> str:
        method = self.resolver.method(flow.owner, flow.method)
        return self._ids_param(method) if method is not None else "the ids"

    def _matters(self, flow: Flow) -> bool:
        """A followed call belongs to the chain when the ids are stored, or something breaks, below it."""
        if any(w.tainted or w.attr == self.protocol.state_attribute for w in flow.writes) or flow.problems:
            return True
        return any(c.flow is not None and self._matters(c.flow) for c in flow.calls)

    def _problem(self, entry: ClassRef, owner: ClassRef, problem: Problem, trace: Trace) -> None:
        path = self._path(owner.module)
        if problem.kind in ("missing-method", "guarded-missing", "assert-fails"):
            why = problem.detail
            if problem.suggestion:
                why += f" (did you mean {problem.suggestion}?)"
            trace.hops.append(Hop("unresolved", problem.source, path, problem.line, "broken", reason=why))
            trace.findings.append(self._finding("broken-delegation", "", entry, owner.module, problem.line,
                                                problem.col, trace, owner_name=owner.name, why=why))
        elif problem.kind == "opaque-receiver":
            trace.unresolved.append(f"{problem.receiver}: {problem.detail}")
            trace.hops.append(Hop("unresolved", problem.source, path, problem.line, "unresolved",
                                  reason=f"cannot tell the class of {problem.receiver}: {problem.detail}"))
            trace.findings.append(self._finding("unresolved", "receiver", entry, owner.module, problem.line,
                                                problem.col, trace, callee=problem.source, receiver=problem.receiver,
                                                why=problem.detail))
        elif problem.kind == "cycle":
            trace.unresolved.append(f"delegation cycle back to {problem.source}")
            trace.hops.append(Hop("unresolved", f"{owner.fullname}", path, problem.line, "cycle",
                                  reason="delegation cycle"))
            trace.findings.append(self._finding("unresolved", "cycle", entry, owner.module, problem.line, 0, trace,
                                                owner_name=owner.name, method=problem.source.rpartition(".")[2]))
        elif problem.kind == "depth":
            trace.unresolved.append("delegation deeper than the bound")

    # -- the state and its readers ------------------------------------------------------------------
    def _write_hop(self, entry: ClassRef, owner: ClassRef, write: Write, trace: Trace) -> None:
        proto = self.protocol
        trace.written = True
        if not write.owners:
            receiver = write.target.rpartition(".")[0]
            reason = write.owner_why or "unknown"
            trace.unresolved.append(f"{receiver}: {reason}")
            trace.hops.append(Hop("unresolved", write.target, self._path(owner.module), write.line, "unresolved",
                                  reason=f"cannot tell the class of {receiver}: {reason}"))
            trace.findings.append(self._finding("unresolved", "state-owner", entry, owner.module, write.line,
                                                write.col, trace, target=write.target, why=reason, receiver=receiver))
            return
        for inst in write.owners:
            trace.state_owners.append(inst.cls)
            trace.hops.append(Hop("write", f"{inst.cls.fullname}.{write.attr}", self._path(owner.module), write.line,
                                  inst.how))
            trace.pending.append((inst.cls, write, owner))
            if not trace.state_attribute or write.attr == proto.state_attribute:
                trace.state_attribute = write.attr

    def _states(self, entry: ClassRef, trace: Trace) -> None:
        """Readers of every state the ids reach; a dead write when no running forward reads any."""
        proto = self.protocol
        pending = trace.pending
        if not pending:
            return
        entry_methods = proto.forward_methods or ("forward",)
        any_read = False
        dead: list[tuple[ClassRef, Write, ClassRef, str]] = []
        inserted: list[tuple[int, list[Hop]]] = []
        for state_owner, write, owner in pending:
            reach = readers_of(self.resolver, state_owner, write.attr, entry_methods, tuple(sorted(trace.markers)))
            hops: list[Hop] = []
            for r in reach.readers:
                # a read in a helper: the forward that runs comes first, at its call on the way
                for cls, fn, line in r.path[:1]:
                    hop = Hop("read", f"{cls.fullname}.{fn.name}", self._path(cls.module), line,
                              f"runs for {state_owner.name} and calls "
                              f"{' -> '.join([f.name for _, f, _ in r.path[1:]] + [r.function.name])}, which "
                              f"{r.how}")
                    if hop.qualname not in {h.qualname for h in hops}:
                        hops.append(hop)
                hops.append(Hop("read", f"{r.cls.fullname}.{r.function.name}", self._path(r.cls.module), r.line,
                                r.how))
            index = next(i for i, h in enumerate(trace.hops)
                         if h.kind == "write" and h.qualname == f"{state_owner.fullname}.{write.attr}"
                         and h.line == write.line)
            inserted.append((index, hops))
            if hops:
                any_read = True
                continue
            cut = ""
            if reach.entry is not None:
                lost = unreached_readers(self.resolver, state_owner, write.attr, reach)
                if lost:
                    cls, fn = reach.entry
                    cut = (f"; {cls.name}.{fn.name} ({self._path(cls.module)}:{fn.line}) runs for "
                           f"{state_owner.name} and never reaches the read in {lost[0].cls.name}.{lost[0].function.name}")
            dead.append((state_owner, write, owner, cut))
        for index, hops in sorted(inserted, key=lambda item: -item[0]):
            trace.hops[index + 1:index + 1] = hops
        if any_read:
            return
        for state_owner, write, owner, cut in dead[:1]:
            near = (write.attr != proto.state_attribute and proto.state_attribute
                    and difflib.SequenceMatcher(None, write.attr, proto.state_attribute).ratio() >= 0.85)
            if near:
                trace.findings.append(self._finding("dead-write", "near-miss", entry, owner.module, write.line,
                                                    write.col, trace, target=write.target))
            else:
                trace.findings.append(self._finding(
                    "dead-write", "no-reader", entry, owner.module, write.line, write.col, trace,
                    target=write.target, state_owner=state_owner.fullname, attr=write.attr, cut=cut))

    # -- checks on each method's summary ------------------------------------------------------------
    def _summary_checks(self, entry: ClassRef, concrete: ClassRef, owner: ClassRef, method: Function,
                        trace: Trace) -> None:
        proto = self.protocol
        ids_param = self._ids_param(method)
        flag_suffix = "." + proto.output_flag if proto.output_flag else ""
        flag_writes = [w for w in method.writes if flag_suffix and w.target.endswith(flag_suffix) and w.literal_true]
        for receiver in dict.fromkeys(w.target[: -len(flag_suffix)] for w in flag_writes):
            lines = [w.line for w in flag_writes if w.target[: -len(flag_suffix)] == receiver]
            partial = self._one_sided(method, ids_param, lines)
            for cls in self._classes(concrete, receiver):
                if partial:
                    trace.flag_partial[cls] = partial
                else:
                    trace.flag_set_on.add(cls)
        for fallback in method.fallbacks:
            logged = any(proto.is_logging_call(name) for name in fallback.branch_calls)
            if fallback.param == ids_param and not logged:
                trace.findings.append(self._finding(
                    "silent-fallback", "", entry, owner.module, fallback.line, fallback.col, trace,
                    owner_name=owner.name, method=method.name, value=fallback.value_src, param=fallback.param))
        tags = [w for w in method.writes if w.target.startswith("*.")]
        for write in tags:
            trace.markers.add(write.target[2:])
        known = [w for w in tags if w.target[2:] in proto.state_markers]
        if any(w.literal_true for w in known) and not any(w.value_src == "False" for w in known):
            first = next(w for w in known if w.literal_true)
            trace.tags_without_clear.append(TagSite(self._path(owner.module), first.line, first.col,
                                                    f"{owner.fullname}.{method.name}"))

    def _classes(self, concrete: ClassRef, receiver: str) -> list[ClassRef]:
        if receiver == "self":
            return [concrete]
        result = self.resolver.receiver_types(concrete, receiver)
        return [] if not isinstance(result, list) else [t.cls for t in result]

    @staticmethod
    def _one_sided(method: Function, ids_param: str, lines: list[int]) -> str:
        """"" when some write runs whatever the ids are; else which path lacks it."""
        branches = [b for b in method.none_branches if b[0] == ids_param]
        if not branches:
            return ""
        in_fallback = in_explicit = False
        for line in lines:
            sides = [("fallback" if b[1] <= line <= b[2] else "explicit" if b[3] <= line <= b[4] else "")
                     for b in branches]
            if not any(sides):
                return ""
            in_fallback |= "fallback" in sides
            in_explicit |= "explicit" in sides
        if in_fallback and in_explicit:
            return ""
        return (f"only when {ids_param} is None (the fallback path)" if in_fallback
                else f"only when {ids_param} is given")

    def _check_flag(self, entry: ClassRef, trace: Trace) -> None:
        proto = self.protocol
        if not proto.output_flag:
            return
        for concrete, owner, method, _ in trace.nodes:
            if concrete in trace.flag_set_on or (concrete, method.line) in trace.untraced:
                continue
            readers = [
                (cls, fn) for cls, fn in self.resolver.methods_in_mro(concrete, proto.output_flag)
                if fn.name not in ("__init__", proto.setter)
                and any(r.target == f"self.{proto.output_flag}" for r in fn.reads)
            ]
            if not readers:
                continue
            cls, fn = readers[0]
            read = next(r for r in fn.reads if r.target == f"self.{proto.output_flag}")
            partial = trace.flag_partial.get(concrete)
            sets = f"sets it {partial}" if partial else "never sets it"
            trace.findings.append(self._finding(
                "flag-not-set", "", entry, owner.module, method.line, method.col, trace, reader=f"{cls.name}.{fn.name}",
                flag=proto.output_flag, where=f"{self._path(cls.module)}:{read.line}", owner_name=owner.name,
                method=method.name, sets=sets))
            trace.flag_set_on.add(concrete)

    def _check_handoff(self, entry: ClassRef, trace: Trace) -> None:
        if not trace.written:
            return
        dropped = dropped_aux(self.flow, self.resolver, entry, self.protocol.output_flag,
                              self.protocol.forward_methods or ("forward",))
        if dropped is not None:
            trace.findings.append(self._finding(
                "aux-dropped", "", entry, dropped.cls.module, dropped.line, dropped.col, trace,
                forward=f"{dropped.cls.name}.{dropped.method}", name=dropped.name, flag=self.protocol.output_flag,
                where=f"{self._path(dropped.cls.module)}:{dropped.flag_line}"))

    def _runner_default_calls(self) -> set[str]:
        """Default-layer methods that code outside the entry modules (the runner) calls."""
        if not hasattr(self, "_default_calls"):
            called: set[str] = set()
            for module in self.project.by_module:
                if self.protocol.is_entry_module(module) or not any(
                        self.project.mentions(module, name) for name in self.protocol.default_methods):
                    continue
                summary = self.project.module(module)
                if summary is None or summary.error:
                    continue
                # the functions and methods whose text names a default method, parsed one at a time
                names = [name for name, _, _ in summary.spans()]
                names += [f"{c.qualname}.{name}" for c in summary.classes for name, _, _ in c.spans()]
                for name in names:
                    text = self.project.function_text(module, name) or ""
                    if not any(d in text for d in self.protocol.default_methods):
                        continue
                    fn = self.project.function(module, name)
                    for call in fn.calls if fn is not None else ():
                        if call.func.rpartition(".")[2] in self.protocol.default_methods:
                            called.add(call.func.rpartition(".")[2])
            self._default_calls = called
        return self._default_calls

    def _check_defaults(self, entry: ClassRef, trace: Trace) -> None:
        called = self._runner_default_calls() if self.protocol.default_methods else set()
        if not called:
            return
        used = next((found for name in self.protocol.default_methods if name in called
                     for found in [self.resolver.find_method(entry, name)] if found), None)
        for name in self.protocol.default_methods:
            found = self.resolver.find_method(entry, name) if name not in called else None
            if found is None:
                continue
            owner, fn = found
            if used is not None and used[0] == owner:
                continue
            runner_name = min(called)
            where = f"; it resolves that to {used[0].name}.{runner_name}" if used else ""
            trace.findings.append(self._finding("dead-default", "", entry, owner.module, fn.line, fn.col, trace,
                                                owner_name=owner.name, method=name, runner_method=runner_name,
                                                where=where))

    # -- verdict ----------------------------------------------------------------------------------
    def _finish(self, entry: ClassRef, entry_line: int, trace: Trace) -> ModelResult:
        errors = [f for f in trace.findings if is_error(f)]
        if errors:
            return self._result(entry, entry_line, "broken", errors[0].message, trace)
        if not trace.written and not trace.unresolved:
            why = self._no_state_reason(trace)
            trace.unresolved.append(why)
            concrete, owner, method, _ = trace.nodes[0]
            trace.hops.append(Hop("unresolved", f"{owner.fullname}.{method.name}", self._path(owner.module),
                                  method.line, "body", reason=why))
            trace.findings.append(self._finding("unresolved", "body", entry, owner.module, method.line, method.col,
                                                trace, why=why))
        if trace.unresolved:
            return self._result(entry, entry_line, "unknown", trace.unresolved[0], trace)
        return self._result(entry, entry_line, "ok", "", trace)

    def _no_state_reason(self, trace: Trace) -> str:
        concrete, owner, method, flow = trace.nodes[0]
        if any(p.kind == "not-implemented" for p in flow.problems):
            return f"{owner.name}.{method.name} raises NotImplementedError"
        why = f"{owner.name}.{method.name} stores its ids nowhere the tracer can follow"
        written = sorted({w.target for w in flow.writes if w.target.startswith("self.")})
        if written:
            why += f" (it writes {', '.join(written[:3])}, from values that do not depend on the ids)"
        return why

    def _result(self, entry: ClassRef, line: int, verdict: Verdict, reason: str, trace: Trace) -> ModelResult:
        owners = list(dict.fromkeys(trace.state_owners))
        draft = self.protocol.is_draft(entry.module, entry.name) or entry.fullname in self.drafts
        findings = [on_draft_head(f, self.protocol.setter) for f in trace.findings] if draft else trace.findings
        return ModelResult(
            entry=entry.fullname, file=self._path(entry.module), line=line, protocol=self.protocol.name,
            verdict=verdict, reason=reason, chain=tuple(trace.hops),
            state_owner=owners[0].fullname if owners else "",
            state_attribute=trace.state_attribute or self.protocol.state_attribute,
            findings=tuple(sorted(set(findings), key=Finding.sort_key)), draft=draft,
            tags_without_clear=tuple(dict.fromkeys(trace.tags_without_clear)),
        )


__all__ = ["ChainTracer"]


def _stores_ids_below(flow: Flow, depth: int = 0) -> bool:
    """Some call the flow followed with the ids stores them (transitively)."""
    return depth < 20 and any(c.flow is not None and (any(w.tainted for w in c.flow.writes)
                                                      or _stores_ids_below(c.flow, depth + 1))
                              for c in flow.calls)
