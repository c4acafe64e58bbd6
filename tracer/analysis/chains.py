"""Chains stage: for one entry class and one protocol, the hops from the
entry's setter to the state write and its readers, and the findings on them."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from tracer.checks import finding, on_draft_head
from tracer.model.findings import Finding
from tracer.model.kinds import Verdict
from tracer.model.protocol import Protocol
from tracer.model.results import Hop, ModelResult, TagSite
from tracer.model.summary import Function
from tracer.resolve.resolver import ClassRef, Resolver, Typed, Untyped

MAX_HOPS = 12  # delegation depth bound (cycles are detected before this)


@dataclass
class _Trace:
    """Mutable scratch state of one trace (never leaves this module)."""

    hops: list[Hop] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    state_owners: list[ClassRef] = field(default_factory=list)
    flag_set_on: set[ClassRef] = field(default_factory=set)
    flag_partial: dict[ClassRef, str] = field(default_factory=dict)  # set on one path only
    untraced: set[tuple[ClassRef, int]] = field(default_factory=set)  # setters whose body was not followed
    tags_without_clear: list[TagSite] = field(default_factory=list)
    visited: set[tuple[ClassRef, str]] = field(default_factory=set)  # on the current path
    done: set[tuple[ClassRef, str]] = field(default_factory=set)  # fully traced
    concretes: list[tuple[ClassRef, ClassRef, Function]] = field(default_factory=list)


class ChainTracer:
    def __init__(self, resolver: Resolver, protocol: Protocol):
        self.resolver = resolver
        self.project = resolver.project
        self.protocol = protocol

    def _path(self, module: str) -> str:
        source = self.project.by_module.get(module)
        return source.path if source else module.replace(".", "/") + ".py"

    def _finding(self, slug: str, variant: str, entry: ClassRef, module: str, line: int, col: int,
                 trace: _Trace, **fields: object) -> Finding:
        proto = self.protocol
        return finding(slug, variant, protocol=proto.name, entry=entry.fullname, file=self._path(module),
                       line=line, col=col, chain=tuple(h.qualname for h in trace.hops), setter=proto.setter,
                       entry_name=entry.name, attribute=proto.state_attribute, **fields)

    def trace(self, entry: ClassRef) -> ModelResult:
        proto = self.protocol
        entry_def = self.resolver.class_def(entry)
        entry_line = entry_def.line if entry_def else 0
        trace = _Trace()
        found = self.resolver.find_method(entry, proto.setter)
        _, mro_notes = self.resolver.mro(entry)
        if found is None:
            problems = mro_notes  # every note leaves the MRO incomplete
            if problems:
                reason = f"no {proto.setter} found, but the MRO is incomplete: {problems[0]}"
                trace.findings.append(self._finding("unresolved", "mro", entry, entry.module, entry_line, 0, trace,
                                                    why=problems[0]))
                return self._result(entry, entry_line, "unknown", reason, trace)
            trace.findings.append(self._finding("missing-setter", "", entry, entry.module, entry_line, 0, trace))
            return self._result(entry, entry_line, "missing", f"no {proto.setter} in the MRO of {entry.name}", trace)
        owner, method = found
        how = "own method" if owner == entry else f"inherited from {owner.name} (MRO)"
        trace.hops.append(Hop("setter", f"{owner.fullname}.{proto.setter}", self._path(owner.module), method.line, how))
        self._follow(entry, entry, owner, method, trace, depth=0)
        self._check_flag(entry, trace)
        self._check_defaults(entry, trace)
        return self._finish(entry, entry_line, trace)

    # -- following the setter body -----------------------------------------------------
    def _follow(self, entry: ClassRef, concrete: ClassRef, owner: ClassRef, method: Function,
                trace: _Trace, depth: int) -> None:
        proto = self.protocol
        key = (concrete, f"{owner.fullname}.{method.name}")
        if key in trace.done:
            return  # reached again through another branch: already traced
        if key in trace.visited:
            trace.unresolved.append(f"delegation cycle back to {owner.name}.{method.name}")
            trace.hops.append(Hop("unresolved", f"{owner.fullname}.{method.name}", self._path(owner.module),
                                  method.line, "cycle", reason="delegation cycle"))
            trace.findings.append(self._finding("unresolved", "cycle", entry, owner.module, method.line, 0, trace,
                                                owner_name=owner.name, method=method.name))
            return
        if depth > MAX_HOPS:
            trace.unresolved.append("delegation deeper than the bound")
            return
        trace.visited.add(key)
        trace.concretes.append((concrete, owner, method))
        ids_param = self._ids_param(method)
        progressed = False
        state_suffix = "." + proto.state_attribute
        flag_suffix = "." + proto.output_flag if proto.output_flag else ""

        flag_writes = [w for w in method.writes
                       if flag_suffix and w.target.endswith(flag_suffix) and w.literal_true]
        for receiver in dict.fromkeys(w.target[: -len(flag_suffix)] for w in flag_writes):
            lines = [w.line for w in flag_writes if w.target[: -len(flag_suffix)] == receiver]
            partial = self._one_sided(method, ids_param, lines)
            for typed in self._types(concrete, receiver):
                if partial:
                    trace.flag_partial[typed.cls] = partial
                else:
                    trace.flag_set_on.add(typed.cls)
        for fallback in method.fallbacks:
            logged = any(proto.is_logging_call(name) for name in fallback.branch_calls)
            if fallback.param == ids_param and not logged:
                trace.findings.append(self._finding(
                    "silent-fallback", "", entry, owner.module, fallback.line, fallback.col, trace,
                    owner_name=owner.name, method=method.name, value=fallback.value_src, param=fallback.param))

        markers = {f"*.{m}" for m in proto.state_markers}
        tags = [w for w in method.writes if w.target in markers]
        if any(w.literal_true for w in tags) and not any(w.value_src == "False" for w in tags):
            first = next(w for w in tags if w.literal_true)
            trace.tags_without_clear.append(TagSite(self._path(owner.module), first.line, first.col,
                                                    f"{owner.fullname}.{method.name}"))

        # A write in the else branch of `if hasattr(recv, setter): recv.setter(...)`
        # only runs when the receiver lacks the setter.
        skipped_else_writes: set[str] = set()
        for call in method.calls:
            receiver, _, name = call.func.rpartition(".")
            if call.guard and name == proto.setter and receiver.startswith("self."):
                guarded = self._types(concrete, receiver)
                if guarded and all(self.resolver.find_method(t.cls, proto.setter) for t in guarded):
                    skipped_else_writes.update(call.guard_else_writes)
        for write in method.writes:
            if not write.target.endswith(state_suffix) or write.target in skipped_else_writes:
                continue
            progressed = True
            receiver = write.target[: -len(state_suffix)]
            self._state_write(entry, concrete, owner, method, write.target, receiver, write.line, write.col, trace)
            break  # the first write names the owner; alternatives write the same attribute

        carriers = (proto.setter, *proto.delegate_methods)
        for call in method.calls:
            receiver, _, name = call.func.rpartition(".")
            if name not in carriers or not receiver:
                continue
            progressed = True
            literal_none = call.args and all(a == "None" for a in call.args) and not call.kwargs
            passes = (call.n_args > 0 or call.star_args) and not literal_none
            if ids_param and not passes:
                trace.findings.append(self._finding(
                    "ids-dropped", "hop", entry, owner.module, call.line, call.col, trace, owner_name=owner.name,
                    method=method.name, callee=call.func, ids_param=ids_param, fallback=proto.fallback_description))
            if receiver == "super()":
                nxt = self.resolver.find_method(concrete, name, after=owner)
                if nxt is None:
                    self._broken(entry, owner, call, f"super() of {owner.name} has no {name}", trace)
                    continue
                self._delegate(entry, concrete, owner, call, nxt, "super() call (MRO)", passes, trace, depth)
                continue
            if receiver == "self":
                nxt = self.resolver.find_method(concrete, name)
                if nxt and nxt[1] is not method:
                    self._delegate(entry, concrete, owner, call, nxt, "self call", passes, trace, depth)
                continue
            types: list[Typed] | Untyped
            if receiver.isidentifier():  # a local: `holder = getattr(self.model, ...)`
                types = self._local_types(concrete, method, receiver)
            else:
                types = self.resolver.receiver_types(concrete, receiver)
            if isinstance(types, Untyped):
                self._unresolved(entry, owner, call, receiver, types.why, trace)
                continue
            for typed in types:
                nxt = self.resolver.find_method(typed.cls, name)
                if nxt is not None:
                    self._delegate(entry, typed.cls, owner, call, nxt, typed.how, passes, trace, depth)
                elif call.guard and f"{receiver}{state_suffix}" in call.guard_else_writes:
                    pass  # the else branch of the hasattr guard writes the state directly (handled above)
                else:
                    mro, notes = self.resolver.mro(typed.cls)
                    incomplete = notes  # every note leaves the MRO incomplete
                    if incomplete:
                        self._unresolved(entry, owner, call, receiver,
                                         f"{typed.cls.name} has no {proto.setter} in the part of its MRO that "
                                         f"could be traced ({incomplete[0]})", trace)
                        continue
                    silently = " (the hasattr guard skips the call silently)" if call.guard else ""
                    self._broken(entry, owner, call,
                                 f"{receiver}, a {typed.cls.name} ({typed.how}), which has no {name}"
                                 f"{silently}", trace)

        # A near-miss of the state attribute (a typo) is a write nobody reads.
        for write in method.writes:
            last = write.target.rpartition(".")[2]
            if write.target.startswith("*.") or last in proto.state_markers:
                continue
            if last != proto.state_attribute and difflib.SequenceMatcher(
                    None, last, proto.state_attribute).ratio() >= 0.85:
                progressed = True
                trace.hops.append(Hop("write", write.target, self._path(owner.module), write.line,
                                      "near-miss of the state attribute"))
                trace.findings.append(self._finding("dead-write", "near-miss", entry, owner.module, write.line,
                                                    write.col, trace, target=write.target))

        # Helper methods of the same object that the setter calls (self._helper(ids)).
        if not progressed:
            for call in method.calls:
                receiver, _, name = call.func.rpartition(".")
                if receiver != "self" or name == method.name:
                    continue
                helper = self.resolver.find_method(concrete, name)
                if helper is None:
                    continue
                helper_owner, helper_fn = helper
                if self.project.mentions(helper_owner.module, proto.state_attribute) and (
                    any(w.target.endswith(state_suffix) for w in helper_fn.writes)
                    or any(c.func.endswith("." + proto.setter) for c in helper_fn.calls)
                ):
                    progressed = True
                    trace.hops.append(Hop("delegate", f"{helper_owner.fullname}.{name}",
                                          self._path(helper_owner.module), helper_fn.line, "helper method",
                                          self._path(owner.module), call.line, call.n_args > 0))
                    self._follow(entry, concrete, helper_owner, helper_fn, trace, depth + 1)
        trace.visited.discard(key)
        trace.done.add(key)
        if not progressed:
            if any(c.func in ("NotImplementedError",) for c in method.calls):
                why = f"{owner.name}.{method.name} raises NotImplementedError"
            else:
                why = (f"{owner.name}.{method.name} neither writes {proto.state_attribute} nor calls "
                       f"{proto.setter} on another object")
                written = sorted({w.target for w in method.writes if w.target.startswith("self.")})
                helpers = sorted({c.func for c in method.calls if c.func.startswith("self.") and c.func.count(".") == 1})
                did = ([f"writes {', '.join(written[:3])}"] if written else []) + (
                    [f"calls {', '.join(h + '()' for h in helpers[:3])}"] if helpers else [])
                if did:
                    why += f" (it {' and '.join(did)}: a mechanism this protocol pack does not describe)"
            trace.hops.append(Hop("unresolved", f"{owner.fullname}.{method.name}", self._path(owner.module),
                                  method.line, "body", reason=why))
            trace.unresolved.append(why)
            trace.untraced.add((concrete, method.line))
            trace.findings.append(self._finding("unresolved", "body", entry, owner.module, method.line, method.col,
                                                trace, why=why))

    def _local_types(self, concrete: ClassRef, method: Function, local: str, depth: int = 0
                     ) -> list[Typed] | Untyped:
        """Classes of a local of the setter body. The first assignment is taken as the
        default and later ones as overrides under if/elif (hasattr) tests: the first later
        one whose value exists on ``concrete`` (a method that returns an attribute, an
        attribute, ``getattr(x, "attr", default)``) wins, as at run time."""
        values = [value for name, value in method.local_types if name == local]
        if not values or depth > 4:
            return Untyped(f"no assignment of the local {local} that can be followed")
        notes: list[str] = []
        for value in values[1:] + values[:1]:
            result = self._value_types(concrete, method, value, depth)
            if isinstance(result, list) and result:
                if notes:
                    result = [Typed(t.cls, f"{t.how} ({'; '.join(notes)})") for t in result]
                return result
            why = result.why if isinstance(result, Untyped) else f"{value} not typed"
            # An attribute that is assigned but cannot be typed is taken at run time:
            # unknown, not the next alternative. (A helper method that cannot be typed
            # is assumed to return the attribute the next alternative names.)
            if value.startswith("=self.") and not why.startswith("no assignment of"):
                return Untyped(f"{local} = {value[1:]}: {why}")
            notes.append(why)
        return Untyped(f"{local}: " + "; ".join(notes))

    def _value_types(self, concrete: ClassRef, method: Function, value: str, depth: int) -> list[Typed] | Untyped:
        if value.startswith("="):
            path = value[1:]
            if path == "self":
                return [Typed(concrete, "self")]
            if path.startswith("self."):
                return self.resolver.receiver_types(concrete, path)
            if path.isidentifier():
                return self._local_types(concrete, method, path, depth + 1)
            return Untyped(f"cannot follow {path}")
        if value.startswith("self.") and value.count(".") == 1:  # a helper method: self.get_x()
            helper = value[5:]
            if self.resolver.find_method(concrete, helper) is None:
                return Untyped(f"{concrete.name} has no {helper}()")
            typed = self.resolver._property_types(concrete, helper)
            return typed if typed else Untyped(f"the value of {concrete.name}.{helper}() cannot be typed")
        if value == "getattr":
            for call in method.calls:
                attr = call.args[1].strip("'\"") if len(call.args) >= 2 else ""
                if call.func != "getattr" or not attr.isidentifier() or call.args[1] == attr:
                    continue
                base = self._value_types(concrete, method, "=" + call.args[0], depth + 1)
                if isinstance(base, Untyped):
                    return base
                found: list[Typed] = []
                for holder in base:
                    inner = self.resolver.attribute_types(holder.cls, attr)
                    if isinstance(inner, list):
                        found.extend(Typed(t.cls, f"{holder.how}; getattr(..., {attr!r}): {t.how}") for t in inner)
                    elif len(call.args) >= 3:  # the default: getattr(x, "attr", x)
                        fallback = self._value_types(concrete, method, "=" + call.args[2], depth + 1)
                        if isinstance(fallback, list):
                            found.extend(Typed(t.cls, f"{t.how}; no {attr} on {holder.cls.name}, getattr default")
                                         for t in fallback)
                return found or Untyped(f"getattr(..., {attr!r}) cannot be typed")
        return Untyped(f"a local built by {value}(...)")

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
                return ""  # outside every None-test branch: always runs
            in_fallback |= "fallback" in sides
            in_explicit |= "explicit" in sides
        if in_fallback and in_explicit:
            return ""
        return (f"only when {ids_param} is None (the fallback path)" if in_fallback
                else f"only when {ids_param} is given")

    def _ids_param(self, method: Function) -> str:
        names = [p.name for p in method.params if p.name not in ("self", "cls")]
        if self.protocol.ids_parameter in names:
            return self.protocol.ids_parameter
        return names[0] if names else ""

    def _types(self, concrete: ClassRef, receiver: str) -> list[Typed]:
        if receiver == "self":
            return [Typed(concrete, "self")]
        result = self.resolver.receiver_types(concrete, receiver)
        return [] if isinstance(result, Untyped) else result

    def _delegate(self, entry, concrete, owner, call, nxt, how, passes, trace, depth) -> None:
        nxt_owner, nxt_method = nxt
        if (concrete, f"{nxt_owner.fullname}.{nxt_method.name}") in trace.done:
            return  # the same target reached from another branch: one hop is enough
        if nxt_owner != concrete:
            how = f"{how}; inherited from {nxt_owner.name}" if how != "self" else f"inherited from {nxt_owner.name}"
        trace.hops.append(Hop("delegate", f"{nxt_owner.fullname}.{nxt_method.name}", self._path(nxt_owner.module),
                              nxt_method.line, how, self._path(owner.module), call.line, passes))
        self._follow(entry, concrete, nxt_owner, nxt_method, trace, depth + 1)

    def _broken(self, entry, owner, call, why, trace) -> None:
        trace.hops.append(Hop("unresolved", call.func, self._path(owner.module), call.line, "broken", reason=why))
        trace.findings.append(self._finding("broken-delegation", "", entry, owner.module, call.line, call.col, trace,
                                            owner_name=owner.name, why=why))

    def _unresolved(self, entry, owner, call, receiver, why, trace) -> None:
        trace.unresolved.append(f"{receiver}: {why}")
        trace.hops.append(Hop("unresolved", call.func, self._path(owner.module), call.line, "unresolved",
                              reason=f"cannot tell the class of {receiver}: {why}"))
        trace.findings.append(self._finding("unresolved", "receiver", entry, owner.module, call.line, call.col, trace,
                                            callee=call.func, receiver=receiver, why=why))

    # -- the state write and its readers ------------------------------------------------
    def _state_write(self, entry, concrete, owner, method, target, receiver, line, col, trace) -> None:
        proto = self.protocol
        types = self._types(concrete, receiver) if receiver != "self" else [Typed(concrete, "self")]
        if not types:
            why = self.resolver.receiver_types(concrete, receiver)
            reason = why.why if isinstance(why, Untyped) else "unknown"
            trace.unresolved.append(f"{receiver}: {reason}")
            trace.hops.append(Hop("unresolved", target, self._path(owner.module), line, "unresolved",
                                  reason=f"cannot tell the class of {receiver}: {reason}"))
            trace.findings.append(self._finding("unresolved", "state-owner", entry, owner.module, line, col, trace,
                                                target=target, why=reason, receiver=receiver))
            return
        for typed in types:
            state_owner = typed.cls
            trace.state_owners.append(state_owner)
            trace.hops.append(Hop("write", f"{state_owner.fullname}.{proto.state_attribute}",
                                  self._path(owner.module), line, typed.how))
            # Readers: methods that read the list. The setter itself counts when it
            # reads the list back (to tag layers); other protocols' setters do not.
            candidates = self.resolver.methods_in_mro(state_owner, proto.state_attribute)
            readers = []
            for cls, fn in candidates:
                if fn.name == "__init__" or (fn.name.startswith("set_") and fn.name != proto.setter):
                    continue
                read = next((r for r in fn.reads if r.target == f"self.{proto.state_attribute}"), None)
                if read is not None:
                    readers.append((cls, fn, read, f"reads self.{proto.state_attribute}"))
            marked = [m for m in proto.state_markers if any(w.target == f"*.{m}" for w in method.writes)]
            for marker in marked:
                for cls, fn in self.resolver.methods_in_mro(state_owner, marker):
                    if fn.name.startswith("set_") or fn.name == "__init__":
                        continue
                    read = next((r for r in fn.reads if r.target == f"*.{marker}"), None)
                    if read is not None:
                        readers.append((cls, fn, read, f"reads the per-layer marker {marker} the setter sets"))
            for cls, fn, read, how in readers:
                trace.hops.append(Hop("read", f"{cls.fullname}.{fn.name}", self._path(cls.module), read.line, how))
            if not readers:
                trace.findings.append(self._finding("dead-write", "no-reader", entry, owner.module, line, col, trace,
                                                    target=target, state_owner=state_owner.fullname))

    def _check_flag(self, entry: ClassRef, trace: _Trace) -> None:
        proto = self.protocol
        if not proto.output_flag:
            return
        for concrete, owner, method in trace.concretes:
            if concrete in trace.flag_set_on or (concrete, method.line) in trace.untraced:
                continue  # set, or the setter does something not followed: never claim "not set"
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
            trace.flag_set_on.add(concrete)  # one finding per class

    def _runner_default_calls(self) -> set[str]:
        """Default-layer methods that code outside the entry modules (the runner) calls."""
        if not hasattr(self, "_default_calls"):
            called: set[str] = set()
            for module in self.project.by_module:
                if self.protocol.is_entry_module(module) or not any(
                        self.project.mentions(module, name) for name in self.protocol.default_methods):
                    continue
                summary = self.project.full(module)
                if summary is None:
                    continue
                functions = list(summary.functions) + [m for c in summary.classes for m in c.methods]
                for fn in functions:
                    for call in fn.calls:
                        if call.func.rpartition(".")[2] in self.protocol.default_methods:
                            called.add(call.func.rpartition(".")[2])
            self._default_calls = called
        return self._default_calls

    def _check_defaults(self, entry: ClassRef, trace: _Trace) -> None:
        """An override of a default-layer method the runner never calls is dead code: the
        model's intended default layers are not the ones used."""
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
                continue  # one class (an interface) offering both names
            runner_name = min(called)
            where = f"; it resolves that to {used[0].name}.{runner_name}" if used else ""
            trace.findings.append(self._finding("dead-default", "", entry, owner.module, fn.line, fn.col, trace,
                                                owner_name=owner.name, method=name, runner_method=runner_name,
                                                where=where))

    # -- verdict --------------------------------------------------------------------------
    def _finish(self, entry: ClassRef, entry_line: int, trace: _Trace) -> ModelResult:
        errors = [f for f in trace.findings if f.severity == "error"]
        if errors:
            return self._result(entry, entry_line, "broken", errors[0].message, trace)
        if trace.unresolved:
            return self._result(entry, entry_line, "unknown", trace.unresolved[0], trace)
        return self._result(entry, entry_line, "ok", "", trace)

    def _result(self, entry: ClassRef, line: int, verdict: Verdict, reason: str, trace: _Trace) -> ModelResult:
        owners = list(dict.fromkeys(trace.state_owners))
        draft = self.protocol.is_draft(entry.module, entry.name)
        findings = [on_draft_head(f, self.protocol.setter) for f in trace.findings] if draft else trace.findings
        return ModelResult(
            entry=entry.fullname, file=self._path(entry.module), line=line, protocol=self.protocol.name,
            verdict=verdict, reason=reason, chain=tuple(trace.hops),
            state_owner=owners[0].fullname if owners else "", state_attribute=self.protocol.state_attribute,
            findings=tuple(sorted(set(findings), key=Finding.sort_key)), draft=draft,
            tags_without_clear=tuple(dict.fromkeys(trace.tags_without_clear)),
        )
