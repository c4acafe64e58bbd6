"""The effective-layer checks (fallback-triggered, offset-mismatch, pipeline-guard,
unreachable-layer, count-mismatch) on one explained model, through the catalogue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracer.checks import finding
from tracer.effective.configs import DraftConfig, TargetConfig
from tracer.effective.convention import convention_fields
from tracer.interp.evaluate import Obj, contains_unknown, is_unknown
from tracer.model.protocol import Protocol
from tracer.model.results import Hop
from tracer.present.scan_json import finding_to_json


@dataclass
class Facts:
    """What the findings are computed from (one explained model)."""

    proto: Protocol
    entry: str
    draft: DraftConfig
    target: TargetConfig
    pp: int
    hops: list[Hop]
    write_hop: Hop | None
    sequence: list[dict[str, Any]]
    runner_ids: list[int] | None
    ranks: list[Any]
    ranges_known: bool
    ranges_how: str | None
    per_rank: dict[int, dict[str, Any]]
    loop_file: str | None
    cap: Any  # CaptureResult of the eager path, or None
    layers_to_capture: list[int] | None  # fully known list, else None
    result: dict[str, Any]
    origin: Protocol | None = None  # the pack whose convention trained the draft (--draft-framework)

    @property
    def final_run(self) -> dict[str, Any]:
        return self.per_rank[self.ranks[-1].rank]["runs"][-1]

    @property
    def state_site(self) -> Hop:
        return self.write_hop or self.hops[0]

    @property
    def loop_line(self) -> int | None:
        return self.cap.loop_line if self.cap is not None else None


def _make(f: Facts, slug: str, variant: str, file: str | None, line: int | None, **fields: Any) -> dict[str, Any]:
    item = finding(slug, variant, protocol=f.proto.name, entry=f.entry, file=file or "", line=line or 0,
                   setter=f.proto.setter, **fields)
    return finding_to_json(item) | {"file": file, "line": line}


def known_list(value: Any) -> list[int] | None:
    return list(value) if isinstance(value, (list, tuple)) and not contains_unknown(value) else None


def effective_findings(f: Facts, notes: list[str]) -> list[dict[str, Any]]:
    other = f.origin is not None and f.origin.id_shift != f.proto.id_shift
    found = _fallback_findings(f) + (_convention_findings(f) if other else _offset_findings(f))
    lost = _pipeline_findings(f, found)
    return found + _unreachable_findings(f, lost) + _count_findings(f, notes)


def _fallback_findings(f: Facts) -> list[dict[str, Any]]:
    out = []
    effective = f.result["effective_layers"]
    final = f.final_run
    keys = list(f.proto.runner_ids_keys or f.proto.draft_ids_keys)
    if final["ids"] is None and not final["returned_early"]:
        site = final["site"]
        draft = f.draft
        if draft.layer_ids is None:
            why = f"the draft config {draft.path.name} names no layer ids ({' / '.join(keys)} absent)"
        elif f.runner_ids is None:
            why = f"the draft's ids {list(draft.layer_ids)} are under `{draft.ids_key}`, which the runner does not read"
        else:
            why = f"the last runner call ({site.get('file')}:{site.get('line')}) passes no ids"
        hint = (f"put the ids under {keys[0] if keys else 'the key the runner reads'} in the draft's config.json"
                if draft.layer_ids is None or f.runner_ids is None else "pass the draft's ids on every call of the setter")
        out.append(_make(f, "fallback-triggered", "no-ids", f.state_site.file, f.state_site.line, why=why,
                         fallback=f.proto.fallback_description, layers_to_capture=f.layers_to_capture,
                         effective=effective, hint=hint))
    if f.result["graph_layers_differ"] and f.result["graph_layers"] is not None:
        graph_sites = [s for s in f.sequence if s.get("before_graph_capture")]
        site = graph_sites[-1] if graph_sites else {}
        out.append(_make(f, "fallback-triggered", "graph", site.get("file"), site.get("line"),
                         where=f"{site.get('file')}:{site.get('line')}",
                         passed="no ids" if not site.get("passes_ids") else "with ids",
                         graph_layers=f.result["graph_layers"], effective=effective))
    return out


def _offset_findings(f: Facts) -> list[dict[str, Any]]:
    """The ids the draft names against the layers the model really captures for them.

    The pack says what an id means (``id_shift``: 1 when id i names the output of layer i,
    0 when it names the input); the model's own loop says which layer's output each stored
    entry holds (tested before or after the layer ran). Only when the loop could not be
    run is the stored list compared with the pack's usual shift."""
    ltc = f.layers_to_capture
    if f.runner_ids is None or f.final_run["ids"] is None or ltc is None:
        return []
    shift = f.proto.id_shift
    written = f.final_run.get("state_write") or {"file": f.state_site.file, "line": f.state_site.line}
    n = f.target.num_hidden_layers
    cap = f.cap
    if cap is not None and cap.complete and len(ltc) == len(f.runner_ids):
        wanted = [i + shift - 1 for i in f.runner_ids]  # the outputs the draft was trained on
        if n is not None and any(not -1 <= o < n for o in wanted):
            # ids that cannot name layer outputs (one is the final boundary, as gpt-oss's
            # setter reads them): the model's own reading stands; what is lost is unreachable-layer
            return []
        # id k -> stored entry k -> the output the loop captures for it (entries never
        # captured are unreachable-layer's, captures of other entries count-mismatch's)
        output_of = dict(zip(cap.captured, cap.captured_outputs, strict=False))
        if all(output_of.get(b, o) == o for b, o in zip(ltc, wanted, strict=False)):
            return []
        got = [output_of[b] for b in ltc if b in output_of]
        after = cap.after_layer
        how = "after each layer runs" if after else "before each layer runs (the input of layer i)"
        expected = wanted if after else [o + 1 for o in wanted]
        return [_make(f, "offset-mismatch", "loop", written["file"], written["line"], requested=f.runner_ids,
                      wanted=wanted, stored=ltc, expected=expected, effective=got, how=how,
                      loop=f"{f.loop_file}:{f.loop_line}")]
    expected = [i + shift for i in f.runner_ids]
    if ltc == expected:
        return []
    effective = f.result["effective_layers"]
    captures = (f"the loop captures the outputs of layers {effective}" if effective is not None
                else f"which would be the outputs of layers {[i - shift for i in ltc]}")
    # at the write the evaluation took (a fallback branch before it was not taken)
    return [_make(f, "offset-mismatch", "", written["file"], written["line"], requested=f.runner_ids,
                  expected=expected, shift=shift, stored=ltc, captures=captures)]


def _convention_findings(f: Facts) -> list[dict[str, Any]]:
    """The draft's ids read in its origin's convention against what this model captures."""
    assert f.origin is not None
    if f.runner_ids is None or f.final_run["ids"] is None:
        return []
    fields = convention_fields(f.origin, f.proto, f.runner_ids, f.result["effective_layers"])
    if fields is None:
        return []
    written = f.final_run.get("state_write") or {"file": f.state_site.file, "line": f.state_site.line}
    return [_make(f, "convention-mismatch", "", written["file"], written["line"], **fields._asdict())]


def _pipeline_findings(f: Facts, findings: list[dict[str, Any]]) -> list[int]:
    """Appends pipeline-guard findings; returns the entries lost to earlier stages."""
    ltc = f.layers_to_capture
    if f.pp == 1 or ltc is None:
        return []
    setter = f.hops[0]
    if not f.ranges_known:
        # Not a finding: what cannot be computed is unknown (explain lists it as such).
        f.result["unknowns"].append({"expr": "stage ranges", "file": setter.file, "line": setter.line,
                                     "why": f"with pp={f.pp} the stage ranges could not be computed ({f.ranges_how}); "
                                            "which ids live on earlier stages is unknown"})
        return []
    last = f.ranks[-1]
    lost = [i for i in ltc if i < last.start]
    if not lost:
        return []
    guard = next((f.per_rank[r.rank]["runs"][-1]["returned_early"] for r in f.ranks[:-1]
                  if f.per_rank[r.rank]["runs"][-1]["returned_early"]), None)
    if guard:
        what = f"the setter returns early off the last rank ({guard['hop']}, line {guard['line']}: `{guard['condition']}`)"
        file, line = guard["file"], guard["line"]
    else:
        what = "nothing in this chain hands earlier stages' aux states to the last stage"
        file, line = setter.file, setter.line
    findings.append(_make(f, "pipeline-guard", "", file, line, pp=f.pp, first=last.start, last=last.end - 1,
                          lost=lost, lost_outputs=[i - 1 for i in lost], what=what))
    return lost


def _unreachable_findings(f: Facts, lost_to_earlier_stages: list[int]) -> list[dict[str, Any]]:
    raised = f.final_run["raised"]
    n = f.target.num_hidden_layers or 0
    if raised and raised["source"].startswith("IndexError"):
        return [_make(f, "unreachable-layer", "raises", raised["file"], raised["line"], hop=raised["hop"],
                      source=raised["source"], max_id=n - 2, n=n)]
    cap, ltc = f.cap, f.layers_to_capture
    if cap is None or not cap.complete or ltc is None:
        return []
    missed = [i for i in cap.never_visited if i not in lost_to_earlier_stages]
    if not missed:
        return []
    span = f"{cap.visited[0]}..{cap.visited[-1]}" if cap.visited else "?"
    outside = [i for i in missed if i not in cap.visited]
    unmarked = [i for i in missed if i in cap.visited]
    out = []
    if outside:
        dropped = [i - 1 for i in outside if i >= 1]
        what = f"the outputs of layers {dropped} are silently dropped" if dropped else "nothing is captured for them"
        out.append(_make(f, "unreachable-layer", "outside", f.loop_file, f.loop_line, outside=outside, span=span,
                         loop=cap.loop_source, what=what, captured=len(cap.captured), stored=len(ltc),
                         max_id=n - 2, n=n))
    if unmarked:
        marker = f.proto.state_markers[0] if f.proto.state_markers else None
        how = (f"tests the per-layer marker `{marker}`, which nothing on this chain sets for them"
               if cap.tested_by == ("marker",) else "never finds them")
        out.append(_make(f, "unreachable-layer", "unmarked", f.loop_file, f.loop_line, span=span,
                         loop=cap.loop_source, unmarked=unmarked, how=how, outputs=[i - 1 for i in unmarked],
                         captured=len(cap.captured), stored=len(ltc)))
    return out


def _count_findings(f: Facts, notes: list[str]) -> list[dict[str, Any]]:
    out = []
    draft, target, cap = f.draft, f.target, f.cap
    count, source = draft.expected_aux_count(target.hidden_size)
    if count is None and draft.fc is None and f.proto.default_aux_count:
        count, source = f.proto.default_aux_count, \
            f"the runner's default of {f.proto.default_aux_count} aux states when the draft names none"
    f.result["expected_aux"] = {"count": count, "source": source}
    if draft.target_hidden_size is not None and target.hidden_size is not None \
            and draft.target_hidden_size != target.hidden_size:
        out.append(_make(f, "count-mismatch", "hidden", str(draft.path), None, draft_hidden=draft.target_hidden_size,
                         target_hidden=target.hidden_size))
    if count is None:
        notes.append(f"expected number of aux states unknown: {source}")
        return out
    if cap is None or not cap.complete:
        return out
    got = len(cap.captured)
    if got == count:
        return out
    hidden = draft.target_hidden_size or target.hidden_size
    ltc = f.layers_to_capture
    dup = ""
    if ltc is not None and len(set(ltc)) != len(ltc):
        dup = f" (layers_to_capture {ltc} repeats an index, which the loop captures once)"
    out.append(_make(f, "count-mismatch", "count", f.loop_file, f.loop_line, count=count, source=source, got=got,
                     dup=dup, hidden=hidden, got_width=got * hidden if hidden else "?",
                     want_width=count * hidden if hidden else "?"))
    return out


def plain(value: Any) -> Any:
    """JSON-ready: unknowns become {"unknown": expr, "why": ...}, tuples lists."""
    if is_unknown(value):
        return {"unknown": value.expr, "why": value.why}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Obj):
        return {"object": value.name}
    return value
