"""``tracer verify``: run SGLang's own model code and compare the layers it
really captures with the draft config and with tracer's static prediction."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from .families import (
    FAMILIES,
    DraftIds,
    family_for_entry,
    load_json_config,
    read_draft_ids,
    shrink_config,
    tiny_config,
)

DEFAULT_TINY_LAYERS = 8
PATH_NAMES = ("extend", "decode", "cuda_graph")


def _fmt(ids) -> str:
    if ids is None:
        return "none"
    return "[" + ",".join("?" if i is None else str(i) for i in ids) + "]"


def judge(row: dict[str, Any]) -> dict[str, Any]:
    """PASS when every path ran, every path captured the same layers, those
    are the layers the draft asked for (when it asked), and the static
    prediction (when available) names the same layers for each path."""
    problems: list[str] = []
    requested = row["draft"]["runner"]
    static = row["static"]
    # a prediction the static side could not make is unknown, not a disagreement
    known = static.get("available") and static.get("effective_layers") is not None
    seen = {}
    for name, path in row["runtime"].get("paths", {}).items():
        if "error" in path:
            problems.append(f"{name}: {path['error']}")
            continue
        captured = path["captured"]
        seen[name] = captured
        if None in captured:
            problems.append(f"{name}: an aux tensor matches no layer's stream")
        if requested is not None and captured != list(requested):
            problems.append(f"{name} captured outputs of {_fmt(captured)}, draft asked for {_fmt(requested)}")
        if known:
            predicted = static["graph_layers"] if name == "cuda_graph" else static["effective_layers"]
            if predicted != captured:
                problems.append(f"{name}: static predicts {_fmt(predicted)}, runtime {_fmt(captured)}")
    if "error" in row["runtime"]:
        problems.append(row["runtime"]["error"])
    for step in row["runtime"].get("setter_calls", []):
        if isinstance(step["result"], dict) and "error" in step["result"]:
            problems.append(f"{step['call']} raised {step['result']['error']}")
    if len({tuple(v) for v in seen.values()}) > 1:
        problems.append("paths capture different layers: " +
                        ", ".join(f"{k} {_fmt(v)}" for k, v in seen.items()))
    static_agrees = None
    if known and seen:
        static_agrees = all(
            (static["graph_layers"] if k == "cuda_graph" else static["effective_layers"]) == v
            for k, v in seen.items())
    return {"verdict": "PASS" if not problems else "FAIL", "problems": problems,
            "static_agrees": static_agrees}


def render_table(report: dict[str, Any]) -> str:
    fw = report["framework"]
    lines = [f"sglang {fw['version']} ({fw['layout']} layout) at {fw['root']}; device {report['device']}"
             + (f" ({report['device_name']})" if report.get("device_name") else "")]
    head = ["entry", "L", "draft ids", "static", *report["paths"], "static=runtime", "result"]
    rows = [head]
    for row in report["rows"]:
        static = row["static"]
        if static.get("available") and static.get("effective_layers") is None:
            s = "unknown"
        elif static.get("available"):
            s = _fmt(static["effective_layers"])
            if static["graph_layers"] != static["effective_layers"] and "cuda_graph" in report["paths"]:
                s += f" graph {_fmt(static['graph_layers'])}"
        else:
            s = "n/a"
        cells = [row["entry"], str(row["runtime"].get("num_hidden_layers", "?")), _fmt(row["draft"]["runner"]), s]
        for name in report["paths"]:
            path = row["runtime"].get("paths", {}).get(name)
            if path is None:
                cells.append("-")
            elif "error" in path:
                cells.append("error")
            else:
                cells.append(_fmt(path["captured"]))
        agrees = row["judgement"]["static_agrees"]
        cells.append(("unknown" if static.get("available") else "n/a") if agrees is None
                     else ("yes" if agrees else "NO"))
        cells.append(row["judgement"]["verdict"])
        rows.append(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    lines.append("Captured layers are outputs of layer i (-1 = embedding), matched numerically to the "
                 "stream each decoder layer receives.")
    said = set()
    for row in report["rows"]:
        for problem in row["judgement"]["problems"]:
            lines.append(f"  {row['entry']} {_fmt(row['draft']['runner'])}: {problem}")
        if not row["static"].get("available"):
            note = f"  {row['entry']}: static: n/a ({row['static'].get('why', '')})"
        elif row["static"].get("unknowns"):
            note = f"  {row['entry']}: static unknown: {row['static']['unknowns'][0]}"
        else:
            note = None
        if note and note not in said:
            said.add(note)
            lines.append(note)
        if row["draft"]["requested"] != row["draft"]["runner"]:
            lines.append(f"  {row['entry']}: the draft names {_fmt(row['draft']['requested'])} under "
                         f"{row['draft']['source']}; the runner passes {_fmt(row['draft']['runner'])}")
    lines.append("stubs (import-only, loud if called): " + (", ".join(report["stubs"]) or "none"))
    lines.append("patches: " + ("; ".join(report["patches"]) or "none"))
    return "\n".join(lines)


def run_verify(entries, drafts: list[DraftIds], draft_raws, target_config: str | None,
               layers: int | None, device: str, framework: str | None,
               paths: list[str], with_static: bool = True) -> dict[str, Any]:
    from . import adapters, harness, stubs

    release = adapters.locate(framework)
    if device == "auto":
        device = "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", None) != "" and _cuda_available() else "cpu"
    adapter = adapters.adapter_for(release, device)
    adapter.prepare_process()
    adapter.init_distributed()
    device_name = None
    if device == "cuda":
        import torch

        device_name = torch.cuda.get_device_name(0)
    want_graph = "cuda_graph" in paths and device == "cuda"
    report: dict[str, Any] = {
        "framework": {"root": release.root, "version": release.version, "layout": release.layout},
        "device": device, "device_name": device_name,
        "paths": [p for p in PATH_NAMES if p in paths and (p != "cuda_graph" or want_graph)],
        "rows": [],
    }
    for entry in entries:
        family = family_for_entry(entry)
        entry_name = entry if entry in family.entries else family.entries[0]
        if target_config:
            raw = shrink_config(load_json_config(target_config), layers)
        else:
            raw = tiny_config(family, layers or DEFAULT_TINY_LAYERS)
        for draft, draft_raw in zip(drafts, draft_raws):
            started = time.time()
            runtime = harness.run_case(adapter, family, raw, draft.runner, device, want_graph)
            runtime["paths"] = {k: v for k, v in runtime.get("paths", {}).items() if k in report["paths"]}
            static = (__import__("tracer.verify.static", fromlist=["predict"]).predict(
                release.root, entry_name, raw, draft_raw) if with_static
                else {"available": False, "why": "--no-static"})
            row = {"entry": entry_name, "family": family.key, "draft": draft.__dict__,
                   "static": static, "runtime": runtime, "seconds": round(time.time() - started, 2)}
            row["judgement"] = judge(row)
            report["rows"].append(row)
    report["stubs"] = stubs.installed()
    report["stub_names_read"] = stubs.report()
    report["patches"] = list(dict.fromkeys(adapter.patches))
    report["setter_order"] = adapter.setter_order() if want_graph else None
    return report


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _draft_raw(ids: DraftIds, path: str | None):
    if path is not None:
        return load_json_config(path)
    if ids.runner is None:
        return {}
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": list(ids.runner)}}


@click.command("verify")
@click.option("--entry", "entries", multiple=True, required=True,
              help="SGLang entry class (repeatable), e.g. Qwen2ForCausalLM; known: "
                   + ", ".join(e for f in FAMILIES.values() for e in f.entries))
@click.option("--draft-config", "draft_configs", multiple=True, type=click.Path(exists=True),
              help="EAGLE-3 draft config.json or its folder (repeatable)")
@click.option("--ids", "id_lists", multiple=True,
              help="instead of a draft config: ids as the runner would pass them, e.g. 1,2,3 or none")
@click.option("--target-config", type=click.Path(exists=True), default=None,
              help="real target config.json (or folder): architecture kept, sizes shrunk")
@click.option("--layers", type=int, default=None,
              help=f"decoder layers (default: the target's, or {DEFAULT_TINY_LAYERS} for a tiny config)")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--framework", type=click.Path(exists=True, file_okay=False), default=None,
              help="folder holding the sglang package of a release (default: the installed one)")
@click.option("--paths", default="extend,decode,cuda_graph", show_default=True,
              help="paths to run; cuda_graph only on --device cuda")
@click.option("--no-static", is_flag=True, help="skip tracer's static prediction")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="also write the JSON report here")
def verify_command(entries, draft_configs, id_lists, target_config, layers, device, framework, paths,
                   no_static, fmt, output):
    """Run SGLang's own model code and report which layers EAGLE-3 really captures.

    Builds each entry class from a tiny config (or a real config shrunk in
    sizes only), calls set_eagle3_layers_to_capture the way the release's
    runner does, runs prefill (EXTEND), a decode step and, on CUDA, a replayed
    CUDA graph of decode, and matches every aux hidden state to the decoder
    layer whose output it is. Exit 0 when every row passes, 1 otherwise,
    2 on a usage error.
    """
    from .adapters import FrameworkNotFound

    drafts = [read_draft_ids(path) for path in draft_configs] + [read_draft_ids(None, ids) for ids in id_lists]
    raws = [load_json_config(path) for path in draft_configs] + [
        _draft_raw(d, None) for d in drafts[len(draft_configs):]]
    if not drafts:
        raise click.UsageError("give --draft-config DIR or --ids LIST (at least one)")
    try:
        for entry in entries:
            family_for_entry(entry)
    except KeyError as exc:
        raise click.UsageError(str(exc.args[0]))
    try:
        report = run_verify(list(entries), drafts, raws, target_config, layers, device, framework,
                            [p.strip() for p in paths.split(",") if p.strip()], not no_static)
    except FrameworkNotFound as exc:
        raise click.UsageError(str(exc))
    except ImportError as exc:
        raise click.ClickException(f"the runtime harness needs torch and transformers: {exc}")
    report["command"] = "tracer verify " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["verify"] else sys.argv[1:])
    text = json.dumps(report, indent=1, default=str)
    if output:
        with open(output, "w") as fh:
            fh.write(text + "\n")
    click.echo(text if fmt == "json" else render_table(report))
    sys.exit(0 if all(r["judgement"]["verdict"] == "PASS" for r in report["rows"]) else 1)


if __name__ == "__main__":  # python -m tracer.verify.cli
    verify_command(prog_name="tracer verify")
