"""What one chain's trace carries, and what the chain kinds (the setter chain in
chains.py, the config-carried ids in config_chain.py, the forward argument in
argument_chain.py) ask of the tracer that runs them. The kinds are typed against
``ChainTracing``, so none imports the tracer that imports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from tracer.analysis.flow import Flow, FlowAnalysis, Write
from tracer.index.project import Project
from tracer.model.findings import Finding
from tracer.model.kinds import Verdict
from tracer.model.protocol import Protocol as Pack
from tracer.model.results import Hop, ModelResult, TagSite
from tracer.model.summary import Function
from tracer.resolve.resolver import ClassRef, Resolver


@dataclass
class Trace:
    """Scratch state of one trace (never leaves the analysis)."""

    hops: list[Hop] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    state_owners: list[ClassRef] = field(default_factory=list)
    state_attribute: str = ""
    flag_set_on: set[ClassRef] = field(default_factory=set)
    flag_partial: dict[ClassRef, str] = field(default_factory=dict)  # set on one path only
    untraced: set[tuple[ClassRef, int]] = field(default_factory=set)
    tags_without_clear: list[TagSite] = field(default_factory=list)
    markers: set[str] = field(default_factory=set)  # per-layer markers the setters set
    nodes: list[tuple[ClassRef, ClassRef, Function, Flow]] = field(default_factory=list)  # (concrete, owner, ...)
    written: bool = False  # some hop stores the ids
    pending: list[tuple[ClassRef, Write, ClassRef]] = field(default_factory=list)  # (state owner, write, writer)
    done: set[tuple[ClassRef, str]] = field(default_factory=set)  # methods already walked


class ChainTracing(Protocol):
    """The tracer (chains.ChainTracer) as the other chain kinds see it."""

    resolver: Resolver
    project: Project
    protocol: Pack
    flow: FlowAnalysis

    def _path(self, module: str) -> str: ...

    def _finding(self, slug: str, variant: str, entry: ClassRef, module: str, line: int, col: int,
                 trace: Trace, **fields: object) -> Finding: ...

    def _finish(self, entry: ClassRef, entry_line: int, trace: Trace) -> ModelResult: ...

    def _result(self, entry: ClassRef, line: int, verdict: Verdict, reason: str, trace: Trace) -> ModelResult: ...

    def _states(self, entry: ClassRef, trace: Trace) -> None: ...

    def _walk(self, entry: ClassRef, flow: Flow, method: Function, trace: Trace, depth: int) -> None: ...
