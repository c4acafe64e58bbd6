"""The chain of a protocol whose ids travel on the config object (no setter).

builder write (config_source.py) -> the entry's ``__init__`` with the config, which
carries the ids (flow.py's :class:`Carrier`) -> the constructors it hands the config
to -> the attribute that stores ``config.<attr>`` -> the forward that reads it (the
usual readers) -> the output path: every method the pack lists as copying the
model's outputs (a CUDA-graph replay's output copy) must keep the pack's output key.

Verdicts: no builder writes the attribute for any of the entry's registered
architectures: ``missing`` (the model does not offer the protocol); written but no
``__init__`` reached from the entry stores it: ``dead-write`` at the builder's write.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tracer.analysis.config_source import ConfigSources, ConfigWrite
from tracer.analysis.flow import Carrier, Values
from tracer.bind.syntax import super_call
from tracer.model.results import Hop, ModelResult
from tracer.resolve.resolver import ClassRef

if TYPE_CHECKING:
    from tracer.analysis.tracing import ChainTracing, Trace

MAX_OUTPUT_HOPS = 6  # output copies delegated to a sub-module, one inside the other


def trace_config(tracer: ChainTracing, sources: ConfigSources, entry: ClassRef, entry_line: int,
                 trace: Trace) -> ModelResult:
    proto = tracer.protocol
    writes = sources.writes_for(entry)
    archs = sources.architectures.get(entry.fullname, [])
    if not writes:
        trace.findings.append(tracer._finding("missing-setter", "config", entry, entry.module, entry_line, 0, trace,
                                              architectures=", ".join(archs) or entry.name))
        return tracer._result(entry, entry_line, "missing",
                              f"no config builder writes {proto.config_attribute} for "
                              f"{', '.join(archs) or entry.name}", trace)
    for write in writes:
        trace.hops.append(Hop("setter", f"{write.writer.fullname}.{write.method}", write.file, write.line,
                              _picked(write)))
    found = tracer.resolver.find_method(entry, "__init__")
    if found is None:
        why = f"{entry.name} has no __init__ that could be read"
        trace.unresolved.append(why)
        return tracer._result(entry, entry_line, "unknown", why, trace)
    owner, method = found
    trace.hops.append(Hop("delegate", f"{owner.fullname}.__init__", tracer._path(owner.module), method.line,
                          "the model is constructed with the config the builder wrote"))
    carrier: Values = (Carrier(proto.config_attribute, proto.target_text_config_keys,
                               _config_param(method.params)),)
    flow = tracer.flow.run(owner, entry, "__init__", [carrier])
    if flow is None:
        why = f"{owner.name}.__init__: its source could not be read"
        trace.unresolved.append(why)
        return tracer._result(entry, entry_line, "unknown", why, trace)
    tracer._walk(entry, flow, method, trace, depth=0)
    if not trace.written:
        first = writes[0]
        trace.findings.append(tracer._finding(
            "dead-write", "config-unread", entry, first.writer.module, first.line, first.col, trace,
            target=first.target, builder=first.builder.name, accepts=", ".join(first.accepts),
            config_attr=proto.config_attribute))
        return tracer._finish(entry, entry_line, trace)
    tracer._states(entry, trace)
    _check_outputs(tracer, entry, trace)
    return tracer._finish(entry, entry_line, trace)


def _picked(write: ConfigWrite) -> str:
    via = "" if write.writer == write.builder else f" (through {write.writer.name}.{write.method})"
    return (f"{write.builder.name} is picked for configs naming {', '.join(write.accepts)} and writes "
            f"{write.target}{via}")


def _config_param(params: object) -> str:
    names = [p.name for p in params if p.name not in ("self", "cls")]  # type: ignore[attr-defined]
    return names[0] if names else "the config"


def _check_outputs(tracer: ChainTracing, entry: ClassRef, trace: Trace) -> None:
    """Each output copy that runs for the entry must keep the key the captured states travel under."""
    proto = tracer.protocol
    if not proto.output_key:
        return
    for name in proto.output_methods:
        found = tracer.resolver.find_method(entry, name)
        if found is None:
            continue
        owner, fn = found
        kept, path = _keeps(tracer, entry, owner, name, 0)
        if kept is False:
            trace.findings.append(tracer._finding(
                "aux-dropped", "output-copy", entry, owner.module, fn.line, fn.col, trace,
                forward=f"{owner.name}.{name}", key=proto.output_key, path=" -> ".join(path)))
            continue
        trace.hops.append(Hop("read", f"{owner.fullname}.{name}", tracer._path(owner.module), fn.line,
                              f"copies {proto.output_key!r} on the output path"
                              + (f" (through {' -> '.join(path[1:])})" if len(path) > 1 else "")))


def _keeps(tracer: ChainTracing, concrete: ClassRef, owner: ClassRef, name: str,
           depth: int) -> tuple[bool | None, list[str]]:
    """Whether ``owner.name`` (run on ``concrete``) mentions the output key, itself or through
    the same method of a sub-module it delegates to; None when it cannot be read."""
    here = [f"{owner.name}.{name}"]
    parsed = tracer.flow.function(owner, name)
    if parsed is None or depth > MAX_OUTPUT_HOPS:
        return None, here
    key = tracer.protocol.output_key
    node = parsed[0]
    if any(isinstance(n, ast.Constant) and n.value == key for n in ast.walk(node)):
        return True, here
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == name):
        receiver = call.func.value  # type: ignore[attr-defined]
        targets: list[tuple[ClassRef, ClassRef]] = []
        if super_call(receiver) is not None:
            found = tracer.resolver.find_method(concrete, name, after=owner)
            if found is not None:
                targets.append((concrete, found[0]))
        elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
                and receiver.value.id == "self":
            typed = tracer.resolver.attribute_types(concrete, receiver.attr)
            for item in typed if isinstance(typed, list) else []:
                found = tracer.resolver.find_method(item.cls, name)
                if found is not None:
                    targets.append((item.cls, found[0]))
        for sub_concrete, sub_owner in targets:
            kept, path = _keeps(tracer, sub_concrete, sub_owner, name, depth + 1)
            if kept is not False:
                return kept, here + path
    return False, here


__all__ = ["trace_config"]
