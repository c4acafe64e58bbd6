"""What a scan produces: per entry class and protocol a chain and a verdict, the
runner's call sites, the findings, and the files that could not be read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracer.model.findings import Finding
from tracer.model.kinds import ChainVerdict, GraphCapture, HopKind, Verdict


@dataclass(frozen=True)
class Hop:
    kind: HopKind
    qualname: str
    file: str
    line: int
    resolved_by: str
    call_file: str = ""
    call_line: int = 0
    passes_ids: bool | None = None
    reason: str = ""


@dataclass(frozen=True)
class TagSite:
    """A per-layer tag set by a setter and never cleared."""

    file: str
    line: int
    col: int
    setter: str  # qualname of the setter that sets it


@dataclass(frozen=True)
class Alternative:
    """One binding of a conditionally bound name, and the verdict it gets."""

    condition: str
    verdict: Verdict
    entry: str
    default: bool = False


@dataclass(frozen=True)
class ModelResult:
    entry: str
    file: str
    line: int
    protocol: str
    verdict: Verdict
    reason: str
    chain: tuple[Hop, ...]
    state_owner: str
    state_attribute: str
    findings: tuple[Finding, ...] = field(default=())
    draft: bool = False  # a draft head: the runner never calls the setter on it
    # A draft head's verdict is "draft" (or "missing"); this is its chain's own verdict.
    chain_verdict: ChainVerdict | None = None
    tags_without_clear: tuple[TagSite, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    # Set by the effective-layers stage (scan --target-config/--draft-config).
    effective_layers: tuple[int, ...] | None = None
    graph_layers: tuple[int, ...] | None = None
    explanation: Mapping[str, Any] | None = None  # explain's full result (its JSON shape)
    extra_slugs: tuple[str, ...] = ()  # slugs a scan JSON lists for the model without their finding
    # What replayed CUDA graphs capture (the runner walk's answer; None on missing and draft rows)
    # and the call site that decides it ("file:line", "" when none does).
    graph_capture: GraphCapture | None = None
    graph_capture_site: str = ""

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(sorted({f.slug for f in self.findings} | set(self.extra_slugs)))


@dataclass(frozen=True)
class CallSite:
    protocol: str
    caller: str  # module.Class.method
    file: str
    line: int
    col: int
    passes_ids: bool | None  # None: not known (never from the runner walk; a hand-made site)
    before_graph_capture: bool | None
    order: int | None  # position in the start-up walk; None when not reached
    graph_capture_reached: bool | None = None  # the start-up walk reached a CUDA-graph capture (None: not known)


@dataclass(frozen=True)
class InputProblem:
    path: str
    line: int
    reason: str


@dataclass(frozen=True)
class ScanStats:
    files_total: int = 0
    files_parsed: int = 0
    files_outlined: int = 0
    functions_parsed: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    result_cache: bool = False  # answered from the whole-result cache
    chains_traced: int = 0  # chains (and runner walks) traced in this run
    chains_reused: int = 0  # taken from the chain memo: no module they read changed
    jedi_questions: int = 0  # attributes the resolver could not type and asked jedi about
    jedi_answers: int = 0  # of those, the ones jedi named a class of the tree for


@dataclass(frozen=True)
class Framework:
    name: str
    version: str
    package_root: str
    fork_of: str = ""  # a fork under another package name: the package its packs were written for


@dataclass(frozen=True)
class ScanResult:
    root: str
    framework: Framework
    protocols: tuple[str, ...]
    models: tuple[ModelResult, ...]
    call_sites: tuple[CallSite, ...]
    findings: tuple[Finding, ...]
    input_errors: tuple[InputProblem, ...]
    stats: ScanStats = ScanStats()
    absent_protocols: tuple[str, ...] = ()  # packs whose setter this release never mentions
    suppressed: tuple[Finding, ...] = ()  # findings an inline `# tracer: ignore` removed
    tool_version: str = ""
    # what the reader must know beside the verdicts (a platform whose runner lives outside the tree)
    notes: tuple[str, ...] = ()
