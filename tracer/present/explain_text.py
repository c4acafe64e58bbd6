"""`tracer explain` in words a person reads."""

from __future__ import annotations

import json
from typing import Any

from tracer.model.escape import printable


def _outputs(indices: list[int] | None) -> str:
    if indices is None:
        return "unknown"
    if not indices:
        return "nothing"
    parts = ["the embedding output" if i == -1 else f"layer {i}" for i in indices]
    return ", ".join(parts)


def explanation_json(result: dict[str, Any]) -> str:
    """`tracer explain --format json` (a value JSON cannot hold is written as its str)."""
    return json.dumps(result, indent=2, default=str)


def format_explanation(result: dict[str, Any]) -> str:
    lines = []
    entry = result.get("entry") or "?"
    lines.append(f"{entry}")
    n = result.get("num_hidden_layers")
    lines.append(f"  target: {n} layers, hidden size {result.get('hidden_size')}" + (f", pp={result['pp']}" if result.get("pp", 1) > 1 else ""))
    origin = result.get("draft_convention")
    if result.get("requested_ids") is None:
        lines.append("  draft: names no layer ids")
    elif origin:  # explain --draft-framework: the ids mean what the draft's own framework reads them as
        outputs = [i + origin["id_shift"] - 1 for i in result["requested_ids"]]
        lines.append(f"  draft asks, in {origin['framework']}'s convention, for the outputs of layers {outputs} "
                     f"(ids {result['requested_ids']} from `{result['ids_key']}`)")
    else:
        if result.get("id_shift", 1) == 1:
            lines.append(f"  draft asks for the outputs of layers {result['requested_ids']} (from `{result['ids_key']}`)")
        else:  # the pack's ids name the hidden state entering a layer (vLLM)
            shift = result.get("id_shift", 0)
            outputs = [i + shift - 1 for i in result["requested_ids"]]
            lines.append(f"  draft asks for the hidden states entering layers {result['requested_ids']}, the outputs of "
                         f"layers {outputs} (from `{result['ids_key']}`)")
    scan = result.get("scan") or {}
    if scan.get("verdict") in ("missing", "broken", "unknown"):  # what the scan says comes first
        where = ", ".join(scan.get("fails_at") or [])
        tail = f": start-up fails where the runner calls it ({where})" if scan["verdict"] == "missing" and where else ""
        lines.append(f"  scan: {scan['verdict']}: {scan.get('reason') or 'see the findings'}{tail}")
        for f in scan.get("findings") or []:
            lines.append(f"    {f['file']}:{f['line']}: {f['slug']} ({f['severity']}) {f['message']}")
    elif scan.get("graph_capture") == "fallback":
        lines.append(f"  scan: replayed CUDA graphs capture the fallback layers ({scan.get('graph_capture_site')})")
    if scan.get("verdict") == "missing":
        pass  # no setter: nothing of the runner's ids reaches this model
    elif result.get("ids_written_by"):
        lines.append(f"  the target's layers come from {result['ids_written_by']}, which does not read the draft's ids")
    elif result.get("runner_ids") is None and result.get("requested_ids") is not None \
            and result.get("ids_source") != "argument":
        lines.append("  the runner does not read that key, so it passes no ids")
    lines.append("")
    lines.append("What the code does:")
    for step in result.get("steps", []):
        lines.append(f"  {step}")
    lines.append("")
    ltc = result.get("layers_to_capture")
    lines.append(f"  layers_to_capture = {ltc}")
    loop = result.get("loop")
    if loop:
        visited = loop.get("visited") or []
        span = f"{visited[0]}..{visited[1]}" if len(visited) == 2 else "an unknown range"
        lines.append(f"  the decoder loop `{loop.get('source')}` ({loop.get('file')}:{loop.get('line')}) visits layers {span}")
    captured = result.get("captured_indices")
    effective = result.get("effective_layers")
    if result.get("ids_source") == "argument" and effective is not None:
        lines.append(f"  each decoder layer calls the hook with its index after it ran: the output of {_outputs(effective)}")
    elif captured is not None and effective is not None and (result.get("loop") or {}).get("after_layer"):
        # this model's loop tests (some) entries after the layer ran: it holds that layer's output
        lines.append(f"  it tests entries {captured} after the layer ran, capturing the output of {_outputs(effective)}")
    elif captured is not None:
        lines.append(f"  it captures the input of layers {captured}, i.e. the output of {_outputs(effective)}")
        lines.append("  (the input of layer i is the output of layer i-1; index 0 is the embedding output)")
    else:
        lines.append("  the captured layers could not be determined")
    ranks = result.get("ranks") or []
    if len(ranks) > 1:
        lines.append("  pipeline stages:")
        for rank in ranks:
            start, end = rank["layers"]
            state = "the setter returns early here" if rank["returned_early"] else "the setter runs here"
            lines.append(f"    rank {rank['rank']}: layers {start}..{end - 1} ({state})")
    lines.append("")
    lines.append(f"Eager path captures the outputs of: {_outputs(result.get('effective_layers'))}")
    if result.get("graph_layers") is None:
        lines.append("Replayed CUDA graphs: not computed (the runner's call order is not known)")
    elif result.get("graph_layers_differ"):
        lines.append(f"Replayed CUDA graphs capture the outputs of: {_outputs(result.get('graph_layers'))}")
    else:
        lines.append("Replayed CUDA graphs capture the same layers")
    expected = result.get("expected_aux") or {}
    if expected.get("count") is not None:
        lines.append(f"The draft expects {expected['count']} aux states ({expected['source']})")
    for note in result.get("notes", []):
        lines.append(f"note: {note}")
    findings = result.get("findings", [])
    lines.append("")
    if findings:
        lines.append("Findings:")
        for f in findings:  # scan's line: `path:line:col: slug [severity] protocol: message`
            col = f.get("col") or 1  # 1-based in the scan JSON
            where = f"{f['file']}:{f['line']}:{col}" if f.get("line") else (f.get("file") or "(the configs)")
            proto = f"{f['protocol']}: " if f.get("protocol") else ""
            lines.append(f"{where}: {f['slug']} [{f['severity']}] {proto}{f['message']}")
            if f.get("hint"):
                lines.append(f"    hint: {f['hint']}")
    else:
        lines.append("No findings.")
    unknowns = result.get("unknowns", [])
    if unknowns:
        lines.append("Could not evaluate:")
        for u in unknowns:
            lines.append(f"  {u.get('file')}:{u.get('line')}: `{str(u.get('expr')).splitlines()[0]}`: {u.get('why')}")
    return "\n".join(printable(line) for line in lines)  # source text from the tree: no control characters
