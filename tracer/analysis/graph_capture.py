"""What replayed CUDA graphs capture, from the runner walk's call sites.

A graph replays the layers the setter had set when it was captured, so the answer is the
last setter call before the capture: with the configured ids, ``configured``; without ids
(or with the model's defaults in their place), or no call at all before the capture,
``fallback``. A start-up walk that reaches no graph capture is ``no-graphs``; a protocol
whose ids travel another way (on the config, as an argument) or whose call sites the walk
does not place is ``unknown``. The answer belongs to the runner, so every target row of
the protocol gets it; missing and draft rows get none (the runner never sets their layers).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from tracer.model.findings import Finding
from tracer.model.kinds import GraphCapture
from tracer.model.protocol import Protocol
from tracer.model.results import CallSite, ModelResult


@dataclass(frozen=True)
class GraphAnswer:
    value: GraphCapture
    site: str = ""  # "file:line" of the call that decides it


def graph_capture(proto: Protocol, sites: Sequence[CallSite], findings: Sequence[Finding] = ()) -> GraphAnswer:
    if proto.config_attribute or proto.argument_parameter or not (proto.graph_capture_calls
                                                                   or proto.graph_capture_classes):
        return GraphAnswer("unknown")
    own = [s for s in sites if s.protocol == proto.name]
    dropped = {(f.file, f.line) for f in findings if f.slug == "ids-dropped" and f.entry is None
               and f.protocol == proto.name}

    def with_ids(site: CallSite) -> bool:
        return bool(site.passes_ids) and (site.file, site.line) not in dropped
    placed = [s for s in own if s.before_graph_capture is not None]
    if not placed:
        return GraphAnswer("unknown")
    # A call inside a graph runner (not reached by the walk, compared with its own capture)
    # runs right before that capture: after every call the walk placed.
    inside = [s for s in placed if s.order is None]
    reached = [s for s in placed if s.order is not None]
    captured = bool(inside) or any(s.graph_capture_reached for s in reached)
    if not captured:
        if any(s.graph_capture_reached is None for s in reached):
            return GraphAnswer("unknown")
        return GraphAnswer("no-graphs", _where(reached[0]))
    before = sorted((s for s in reached if s.before_graph_capture), key=lambda s: s.order or 0)
    before += [s for s in inside if s.before_graph_capture]
    if before:
        last = before[-1]
        return GraphAnswer("configured" if with_ids(last) else "fallback", _where(last))
    late = [s for s in placed if with_ids(s)]
    return GraphAnswer("fallback", _where(late[0]) if late else "")


def with_graph_capture(model: ModelResult, answer: GraphAnswer) -> ModelResult:
    if model.draft or model.verdict in ("missing", "draft"):
        return model
    return dataclasses.replace(model, graph_capture=answer.value, graph_capture_site=answer.site)


def _where(site: CallSite) -> str:
    return f"{site.file}:{site.line}"
