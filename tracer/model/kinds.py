"""The closed vocabularies of tracer's results: verdicts, severities, hop kinds."""

from __future__ import annotations

from typing import Literal, get_args

# draft: a draft head (EAGLE/NextN/MTP class registered as an entry) that has the
# setter: not judged, since the runner never calls the setter on a draft worker;
# what its chain would be on its own is kept as the model's chain_verdict.
Verdict = Literal["ok", "broken", "unknown", "missing", "draft"]
ChainVerdict = Literal["ok", "broken", "unknown"]
Severity = Literal["error", "warning", "info"]
# setter: the entry's setter; delegate: a hop the ids travel through; write: the
# state attribute is stored; read: a forward that runs reads it; unresolved: the
# hop where tracing stopped (or, with a finding, where the chain breaks).
HopKind = Literal["setter", "delegate", "write", "read", "unresolved"]
FailOn = Literal["error", "warning", "info", "never"]
# What replayed CUDA graphs capture for a target model, from the runner walk: configured
# (the configured ids reach the setter before graph capture), fallback (graphs are captured
# before that, or the ids are dropped), no-graphs (the runner captures none), unknown.
GraphCapture = Literal["configured", "fallback", "no-graphs", "unknown"]

VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
CHAIN_VERDICTS: tuple[ChainVerdict, ...] = get_args(ChainVerdict)
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
HOP_KINDS: tuple[HopKind, ...] = get_args(HopKind)
FAIL_ON: tuple[FailOn, ...] = get_args(FailOn)
GRAPH_CAPTURES: tuple[GraphCapture, ...] = get_args(GraphCapture)

SEVERITY_ORDER: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


def at_least(severity: str, threshold: str) -> bool:
    """Whether a finding of ``severity`` reaches ``--fail-on threshold`` ("never": no)."""
    if threshold == "never":
        return False
    return SEVERITY_ORDER[severity] >= SEVERITY_ORDER[threshold]
