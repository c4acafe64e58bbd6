"""The capture convention in a plain scan, where two setter definitions disagree.

A class body that defines the setter twice (``shadowed-setter``) is a sign that the
ids' handling changed and one version is wrong. Without configs the scan cannot say
which layers a draft asks for, but it can run the definition that really runs, and
the model's own decoder loop, on representative ids: explain's evaluation with a
synthetic target (``PROBE_LAYERS`` layers) and draft (``probe_ids``). When the loop
then captures other layers than the ids name (by the pack's id meaning and the
loop's own before/after-the-layer convention), the model gets ``offset-mismatch``
(variant ``scan``) and is broken.

Only shadowed setters are probed: the interpreter parses with libcst and costs about
0.2 s a model, too much for every chain of a release on every scan; explain and
``scan --target-config/--draft-config`` run the same check on any model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracer.checks import finding
from tracer.effective.configs import DraftConfig, TargetConfig
from tracer.effective.sources import ExplainError, Sources
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import ModelResult

PROBE_LAYERS = 12
PROBE = Path("<probe>")


def probe_ids(n: int = PROBE_LAYERS) -> tuple[int, ...]:
    """Valid output ids that no setter heuristic treats specially (first id 1, none the last)."""
    return (1, n // 2, n - 2)


def _configs(proto: Protocol) -> tuple[TargetConfig, DraftConfig]:
    text = {"num_hidden_layers": PROBE_LAYERS, "hidden_size": 64}
    top = dict(text, text_config=dict(text))
    target = TargetConfig(PROBE, top, text, None, (), None, PROBE_LAYERS, 64)
    key = (proto.runner_ids_keys or proto.draft_ids_keys or ("layer_ids",))[0]
    draft = DraftConfig(PROBE, {}, probe_ids(), key, None, None, None, None)
    return target, draft


def probe_model(sources: Sources, model: ModelResult, proto: Protocol) -> Finding | None:
    """``offset-mismatch`` (scan) for one model, or None when the loop captures what the ids name
    (or the evaluation could not tell)."""
    target, draft = _configs(proto)
    try:
        from tracer.effective.explain import explain_model  # libcst (~0.2 s to import) only where a probe runs

        outcome = explain_model(sources, model, [], target, draft, proto)
    except (ExplainError, RecursionError):
        return None
    found = [f for f in outcome["findings"] if f["slug"] == "offset-mismatch"]
    stored, effective, loop = outcome.get("layers_to_capture"), outcome.get("effective_layers"), outcome.get("loop")
    if not found or effective is None or not isinstance(stored, list) or not loop:
        return None  # only a loop that ran completely decides, in a plain scan
    ids = list(probe_ids())
    wanted = [i + proto.id_shift - 1 for i in ids]
    after = bool(loop.get("after_layer"))
    how = "after each layer runs" if after else "before each layer runs (the input of layer i)"
    expected = wanted if after else [o + 1 for o in wanted]
    chain = tuple(h.qualname for h in model.chain)
    return finding("offset-mismatch", "scan", protocol=proto.name, entry=model.entry, file=found[0]["file"] or model.file,
                   line=found[0]["line"] or model.line, col=1, chain=chain, setter=proto.setter, requested=ids,
                   n=PROBE_LAYERS, stored=stored, effective=effective, wanted=wanted, expected=expected, how=how,
                   loop=f"{loop['file']}:{loop['line']}")


def probe_shadowed(sources: Sources, protocols: Sequence[Protocol],
                   models: Sequence[ModelResult]) -> dict[str, list[Finding]]:
    """Findings per (protocol, entry) key ``"protocol entry"`` for the models whose setter is shadowed."""
    by_name = {p.name: p for p in protocols}
    out: dict[str, list[Finding]] = {}
    for model in models:
        proto = by_name.get(model.protocol)
        if proto is None or model.verdict != "ok" or model.draft:
            continue
        if not any(f.slug == "shadowed-setter" for f in model.findings):
            continue
        found = probe_model(sources, model, proto)
        if found is not None:
            out[f"{model.protocol} {model.entry}"] = [found]
    return out
