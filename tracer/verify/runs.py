"""The logic of ``tracer verify`` (the command itself is tracer/cli/verify.py): run SGLang's own model code and compare the layers it
really captures with the draft config and with tracer's static prediction."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from tracer.model.errors import UsageError

from .families import (
    DraftIds,
    family_for_entry,
    load_json_config,
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
        if path.get("partial"):
            problems.append(f"{name}: the aux tensors of {_fmt(path['partial'])} are a layer's hidden_states "
                            "without the residual, not the residual stream")
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
        try:
            family = family_for_entry(entry)
        except KeyError:
            family = None  # any other entry class: derived from the release
        if family is not None:
            entry_name = entry if entry in family.entries else family.entries[0]
            if target_config:
                raw = shrink_config(load_json_config(target_config), layers)
            else:
                raw = tiny_config(family, layers or DEFAULT_TINY_LAYERS)
        else:
            entry_name = entry.rsplit(".", 1)[-1]
            raw = None
        for draft, draft_raw in zip(drafts, draft_raws):
            started = time.time()
            if family is not None:
                runtime = harness.run_case(adapter, family, raw, draft.runner, device, want_graph)
            else:
                target_raw = load_json_config(target_config) if target_config else None
                runtime = harness.run_derived(adapter, entry, "sglang-eagle3", draft.runner, device, want_graph,
                                              layers or DEFAULT_TINY_LAYERS, target_raw)
                raw = (runtime.get("config") or {}).pop("raw", None) or {
                    "num_hidden_layers": layers or DEFAULT_TINY_LAYERS, "hidden_size": 64}
            runtime["paths"] = {k: v for k, v in runtime.get("paths", {}).items() if k in report["paths"]}
            static = (__import__("tracer.verify.static", fromlist=["predict"]).predict(
                release.root, entry_name, raw, draft_raw) if with_static
                else {"available": False, "why": "--no-static"})
            row = {"entry": entry_name, "family": family.key if family else "derived", "draft": draft.__dict__,
                   "static": static, "runtime": runtime, "seconds": round(time.time() - started, 2)}
            row["judgement"] = judge(row)
            report["rows"].append(row)
    report["stubs"] = stubs.installed()
    report["stub_names_read"] = stubs.report()
    report["patches"] = list(dict.fromkeys(adapter.patches))
    report["setter_order"] = adapter.setter_order() if want_graph else None
    return report


def verify_all(entries, protocols, include_broken, jobs, timeout, memory, scan_json, cache_dir, work_dir,
                draft_configs, layers, device, framework, paths, fmt, output):
    from . import allrun
    from .adapters import FrameworkNotFound

    if device == "auto":
        device = "cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", None) != "" and _cuda_available() else "cpu"
    wanted_paths = [p.strip() for p in paths.split(",") if p.strip()]
    started = time.time()

    def progress(job):
        status = f"killed ({job.killed})" if job.killed else f"rc {job.rc}"
        sys.stderr.write(f"  {job.entry.rsplit('.', 1)[-1]}: {status}, {job.seconds} s, {job.peak_kib // 1024} MiB\n")

    try:
        report = allrun.run_all(framework or _installed_framework(), device,
                                list(protocols) or ["sglang-eagle3", "sglang-dflash"], include_broken,
                                layers or allrun.DEFAULT_LAYERS, jobs, timeout, memory,
                                allrun.load_drafts(list(draft_configs)), scan_json=scan_json,
                                cache_dir=cache_dir, only=list(entries) or None, work_dir=work_dir,
                                graph="cuda_graph" in wanted_paths and device == "cuda", progress=progress)
    except FrameworkNotFound as exc:
        raise UsageError(str(exc)) from None
    report["paths"] = [p for p in report["paths"] if p in wanted_paths]
    report["rows"] = [r for r in report["rows"] if r["path"] in report["paths"]]
    report["counts"] = allrun.counts(report["entries"], report["rows"], report["paths"])
    report["command"] = "tracer verify " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["verify"] else sys.argv[1:])
    report["wall_seconds"] = round(time.time() - started, 1)
    text = json.dumps(report, indent=1, default=str)
    if output:
        with open(output, "w") as fh:
            fh.write(text + "\n")
    return text if fmt == "json" else allrun.render_markdown(report) if fmt == "markdown" else allrun.render(report)


def _installed_framework():
    from .adapters import locate

    return locate(None).root


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def read_draft_raw(ids: DraftIds, path: str | None):
    if path is not None:
        return load_json_config(path)
    if ids.runner is None:
        return {}
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": list(ids.runner)}}


def read_json_file(path: str) -> Any:
    """A saved report or scan JSON (`verify --render`, `--scan-json`)."""
    return json.loads(open(path).read())


def report_json(report: dict[str, Any]) -> str:
    """`tracer verify --format json` and the report `-o` saves (a value JSON cannot hold: its str)."""
    return json.dumps(report, indent=1, default=str)
