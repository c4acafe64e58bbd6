"""``tracer verify --all``: every entry class the static scan calls ``ok``
(with ``--include-broken``, the broken ones too), each in its own process
with a time and memory budget, beside the static prediction.

Nothing here imports torch or SGLang: the workers (``worker.py``) do. A class
that cannot be built, or whose process dies, times out or outgrows its memory
budget, gets rows saying why in one line; it is counted, never dropped.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import static
from .families import FAMILIES, load_json_config
from .zygote import Zygote

PATHS = ("extend", "decode", "cuda_graph")
DEFAULT_LAYERS = 8
# Default draft ids (L = 8): the fallback [2, L//2, L-3] = [2, 4, 5] differs
# from both, so a graph captured before the configured call shows.
DEFAULT_IDS = {"sglang-eagle3": [0, 3, 5], "sglang-dflash": [0, 3, 6], "vllm-eagle3": [0, 3, 8]}
# vLLM's ids are the input of layer i (0: the embedding, L: after the last layer);
# [0, 3, 8] at L = 8 reaches both ends of the loop.
VLLM_PROTOCOLS = ("vllm-eagle3",)


def vllm_release(framework: str | None):
    """(root, version) when ``framework`` holds a vLLM tree, else None."""
    if not framework:
        return None
    path = Path(framework).resolve()
    if (path / "vllm" / "__init__.py").is_file():
        root = path
    elif path.name == "vllm" and (path / "__init__.py").is_file():
        root = path.parent
    else:
        return None
    version = "unknown"
    text = (root / "vllm" / "_version.py").read_text() if (root / "vllm" / "_version.py").is_file() else ""
    match = re.search(r"""(?:__version__|version)\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", text)
    if match:
        version = match.group(1)
    return str(root), version


def draft_for(protocol: str, raw: dict[str, Any] | None, layers: int) -> tuple[dict[str, Any], list | None, str]:
    """(draft config, the ids the release's runner passes, where they came from)."""
    if protocol in VLLM_PROTOCOLS:
        # gpu_model_runner._get_eagle3_aux_layers_from_config: the draft's top-level
        # eagle_aux_hidden_state_layer_ids, else eagle_config's; else (None) the
        # model's get_eagle3_default_aux_hidden_state_layers()
        if raw is None:
            raw = {"architectures": ["LlamaForCausalLMEagle3"],
                   "eagle_aux_hidden_state_layer_ids": DEFAULT_IDS[protocol]}
        ids = raw.get("eagle_aux_hidden_state_layer_ids")
        eagle = raw.get("eagle_config")
        if not ids and isinstance(eagle, dict):
            ids = eagle.get("eagle_aux_hidden_state_layer_ids")
        if ids:
            return raw, list(ids), "eagle_aux_hidden_state_layer_ids"
        return raw, None, "none (the runner calls get_eagle3_default_aux_hidden_state_layers())"
    if protocol == "sglang-dflash":
        if raw is None:
            raw = {"dflash_config": {"target_layer_ids": DEFAULT_IDS[protocol]}, "num_hidden_layers": 3}
        cfg = raw.get("dflash_config") if isinstance(raw.get("dflash_config"), dict) else {}
        ids = cfg.get("target_layer_ids", raw.get("target_layer_ids"))
        if ids is not None:
            return raw, list(ids), "dflash_config.target_layer_ids"
        # spec_aux_hidden_state.py: build_target_layer_ids(target layers, draft layers)
        n = int(raw.get("num_hidden_layers") or 1)
        if n == 1:
            return raw, [layers // 2], "build_target_layer_ids (1 draft layer)"
        start, end = 1, layers - 3
        span = end - start
        return raw, [int(round(start + i * span / (n - 1))) for i in range(n)], "build_target_layer_ids"
    if raw is None:
        raw = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": DEFAULT_IDS[protocol]}}
    eagle = raw.get("eagle_config")
    if isinstance(eagle, dict) and eagle.get("eagle_aux_hidden_state_layer_ids") is not None:
        return raw, list(eagle["eagle_aux_hidden_state_layer_ids"]), "eagle_config.eagle_aux_hidden_state_layer_ids"
    return raw, None, "none (the runner passes None: the model's fallback)"


def protocol_of_draft(raw: dict[str, Any], vllm: bool = False) -> str:
    if vllm:
        return "vllm-eagle3"
    return "sglang-dflash" if ("dflash_config" in raw or "target_layer_ids" in raw) else "sglang-eagle3"


# -- workers ---------------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    """Resident memory of pid and its children (KiB), from /proc."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total


class Job:
    def __init__(self, entry: str, protocols: list[str], cmd: list[str], out: Path, log: Path):
        self.entry, self.protocols, self.cmd, self.out, self.log = entry, protocols, cmd, out, log
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.peak_kib = 0
        self.killed: str | None = None
        self.rc: int | None = None
        self.seconds = 0.0


def _start(job: Job, env: dict[str, str], cwd: str, cpu_limit_bytes: int | None, zygote=None) -> None:
    job.started = time.time()
    if zygote is not None and job.cmd[1:3] == ["-m", "tracer.verify.worker"]:
        job.proc = zygote.spawn(job.cmd[3:], str(job.log), cwd, cpu_limit_bytes)
        if job.proc is not None:
            return

    def limit():  # pragma: no cover (runs in the child)
        os.setsid()
        if cpu_limit_bytes:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (cpu_limit_bytes, cpu_limit_bytes))

    job.proc = subprocess.Popen(job.cmd, stdout=open(job.log, "w"), stderr=subprocess.STDOUT, env=env,
                                cwd=cwd, preexec_fn=limit)


def _kill(job: Job, why: str) -> None:
    job.killed = why
    try:
        os.killpg(job.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            job.proc.kill()
        except ProcessLookupError:
            pass


def run_jobs(jobs: list[Job], parallel: int, timeout: float, memory_mib: int, env: dict[str, str],
             cwd: str, cpu_limit_bytes: int | None, progress=None, zygote=None) -> None:
    pending = list(jobs)
    running: list[Job] = []
    while pending or running:
        while pending and len(running) < max(1, parallel):
            job = pending.pop(0)
            _start(job, env, cwd, cpu_limit_bytes, zygote)
            running.append(job)
        time.sleep(0.25)
        for job in list(running):
            rss = _rss_kib(job.proc.pid)
            job.peak_kib = max(job.peak_kib, rss)
            if job.proc.poll() is None:
                if time.time() - job.started > timeout:
                    _kill(job, f"time budget of {timeout:g} s spent")
                elif rss > memory_mib * 1024:
                    _kill(job, f"memory budget of {memory_mib} MiB exceeded ({rss // 1024} MiB resident)")
                else:
                    continue
                job.proc.wait()
            job.rc = job.proc.returncode
            job.seconds = round(time.time() - job.started, 1)
            running.remove(job)
            if progress:
                progress(job)


def _read_records(job: Job) -> tuple[dict[str, dict], dict[str, Any] | None]:
    records, done = {}, None
    try:
        lines = job.out.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if item.get("done"):
            done = item
        elif "protocol" in item:
            records[item["protocol"]] = item
    return records, done


def _last_error_line(log: Path) -> str:
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for line in reversed(lines):
        if re.search(r"(Error|Exception|Killed|Abort|Segmentation|error:)", line) and "Warning" not in line:
            return line[:300]
    return lines[-1][:300] if lines else ""


def _death(job: Job) -> str:
    if job.killed:
        return f"worker killed: {job.killed}"
    rc = job.rc
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        how = f"worker died of signal {name}"
    else:
        how = f"worker exited with code {rc}"
    last = _last_error_line(job.log)
    return how + (f": {last}" if last else "")


# -- rows --------------------------------------------------------------------------


def _fmt(ids) -> str:
    if ids is None:
        return "none"
    if isinstance(ids, str):
        return ids
    return "[" + ",".join("?" if i is None else str(i) for i in ids) + "]"


def classify(message: str) -> str:
    """A short reason class for the counts."""
    m = message or ""
    rules = [
        (r"config class not found", "config class not found"),
        (r"config not loadable|defaults failed|read the config back unshrunk", "config not derivable"),
        (r"Indexer has no native|no native \(pure-torch\)|deep_gemm|flashinfer|flash_attn|sgl_kernel|"
         r"cutlass|StubCalled|triton", "needs a kernel the harness lacks"),
        (r"mamba|linear_attn|Mamba|conv_state|ssm|HybridLinear|linear attention", "needs a linear-attention / mamba state pool"),
        (r"\bvision\b|pixel_values|image input|multimodal input|mm_inputs", "needs vision input"),
        (r"time budget|memory budget|signal|exited with code", "worker died or exceeded its budget"),
        (r"has no .*layers_to_capture|no decoder-layer list|no nn.ModuleList", "decoder layers not found"),
        (r"this release's runner has no", "protocol absent from the release"),
        (r"object has no attribute 'hidden_states'.*(mtp|nextn|eagle)", "draft head: its forward needs the "
         "target's hidden states (spec_info)"),
        (r"takes .* positional argument|unexpected keyword argument|missing .* required", "constructor signature"),
        (r"AttributeError", "a config field or attribute the class reads is missing"),
    ]
    for pattern, label in rules:
        if re.search(pattern, m):
            return label
    return "other error"


def build_rows(entry_results: list[dict[str, Any]], paths: list[str]) -> list[dict[str, Any]]:
    rows = []
    for res in entry_results:
        runtime = res["runtime"]
        st = res["static"]
        built = "error" not in runtime
        arch_changed = any("ARCHITECTURE CHANGED" in n for n in runtime.get("notes") or [])
        for path in paths:
            row = {"entry": res["entry"].rsplit(".", 1)[-1], "qualname": res["entry"], "file": res.get("file"),
                   "protocol": res["protocol"], "verdict": res.get("verdict"), "path": path, "draft_ids": res["runner_ids"],
                   "wrapper": res.get("wrapper", False), "draft_head": res.get("draft_head", False)}
            if arch_changed:
                row["attention_only"] = True
            if st.get("available") and st.get("effective_layers") is not None:
                row["static"] = st["graph_layers"] if path == "cuda_graph" else st["effective_layers"]
                if res["protocol"] in VLLM_PROTOCOLS:  # explain names layer outputs; vLLM ids are inputs
                    row["static"] = [None if i is None else i + 1 for i in row["static"]]
            elif st.get("available"):
                row["static"] = "unknown"
                row["static_why"] = (st.get("unknowns") or [""])[0]
            else:
                row["static"] = "n/a"
                row["static_why"] = st.get("why", "")
            if not built:
                row["runtime"] = "not built"
                row["error"] = runtime.get("error", "")
                row["at"] = runtime.get("at", "")
                row["agree"] = None
            else:
                got = runtime.get("paths", {}).get(path)
                if got is None:
                    row["runtime"] = "not run"
                    row["agree"] = None
                elif "error" in got:
                    row["runtime"] = "error"
                    row["error"] = got["error"]
                    row["at"] = got.get("at", "")
                    row["agree"] = None
                else:
                    row["runtime"] = got["captured"]
                    row["aux_count"] = got.get("aux_count")
                    if got.get("partial"):
                        row["partial_stream"] = True
                    if isinstance(row["static"], list):
                        row["agree"] = row["static"] == got["captured"]
                    else:
                        row["agree"] = None
                    for key in ("max_diff_vs_transformers", "max_diff_vs_eager_decode", "matched_by"):
                        if key in got:
                            row[key] = got[key]
                setter_errors = [s["result"]["error"] for s in runtime.get("setter_calls", [])
                                 if isinstance(s.get("result"), dict) and "error" in s["result"]]
                if setter_errors:
                    row["setter_error"] = setter_errors[0]
            rows.append(row)
    return rows


def counts(entry_results: list[dict[str, Any]], rows: list[dict[str, Any]], paths: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for protocol in sorted({r["protocol"] for r in entry_results}):
        out[protocol] = _counts_of([r for r in entry_results if r["protocol"] == protocol and
                                    r.get("verdict", "ok") != "broken"], rows, protocol, paths)
        broken = [r for r in entry_results if r["protocol"] == protocol and r.get("verdict") == "broken"]
        if broken:
            out[protocol]["statically_broken"] = _counts_of(broken, rows, protocol, paths)
    return out


def _counts_of(mine, rows, protocol, paths) -> dict[str, Any]:
    built = [r for r in mine if "error" not in r["runtime"]]
    all_paths = [r for r in built if all(
        p in r["runtime"].get("paths", {}) and "error" not in r["runtime"]["paths"][p] for p in paths)]
    failed = Counter(classify(r["runtime"].get("error", "") + " " + r["runtime"].get("at", ""))
                     for r in mine if "error" in r["runtime"])
    path_errors = Counter()
    for r in built:
        for p in paths:
            got = r["runtime"].get("paths", {}).get(p)
            if got is not None and "error" in got:
                path_errors[f"{p}: {classify(got['error'] + ' ' + got.get('at', ''))}"] += 1
    names = {r["entry"] for r in mine}
    prow = [x for x in rows if x["protocol"] == protocol and x["qualname"] in names]
    files = sorted({r.get("file") for r in all_paths if r.get("file")})
    return {
        "entry_classes": len(mine),
        "built": len(built),
        "all_paths_ran": len(all_paths),
        "model_files_all_paths": len(files),
        "wrappers_all_paths": sorted(r["entry"].rsplit(".", 1)[-1] for r in all_paths if r.get("wrapper")),
        "not_built": dict(failed),
        "path_errors": dict(path_errors),
        "rows": len(prow),
        "rows_compared": sum(1 for x in prow if x["agree"] is not None),
        "rows_agree": sum(1 for x in prow if x["agree"] is True),
        "rows_disagree": sum(1 for x in prow if x["agree"] is False),
        "rows_partial_stream": sum(1 for x in prow if x.get("partial_stream")),
        "all_paths_ran_unchanged_architecture": sum(
            1 for r in all_paths if not any("ARCHITECTURE CHANGED" in n for n in r["runtime"].get("notes") or [])),
    }


def _framework_name(fw: dict[str, Any]) -> str:
    return "vllm" if fw.get("layout") == "vllm" else "sglang"


def _convention(fw: dict[str, Any]) -> str:
    if fw.get("layout") == "vllm":
        return ("static and runtime in vLLM's convention: id i = the input of layer i (0 = the embedding, "
                "L = after the last layer)")
    return "captured = outputs of layer i (-1 = embedding)"


def render(report: dict[str, Any]) -> str:
    fw = report["framework"]
    lines = [f"tracer verify --all: {_framework_name(fw)} {fw['version']} ({fw['layout']} layout), device "
             f"{report['device']}" + (f" ({report['device_name']})" if report.get("device_name") else "")
             + f", {report['layers']} decoder layers; " + _convention(fw)]
    for protocol, info in report["drafts"].items():
        lines.append(f"  {protocol}: the runner passes {_fmt(info['runner_ids'])} ({info['source']})")
    head = ["entry", "protocol", "path", "static", "runtime", "agree"]
    table = [head]
    for row in report["rows"]:
        runtime = row["runtime"]
        if isinstance(runtime, list):
            cell = _fmt(runtime) + (" partial" if row.get("partial_stream") else "") \
                + (" attn-only" if row.get("attention_only") else "")
        elif runtime == "not built":
            cell = "not built"
        else:
            cell = runtime
        agree = "-" if row["agree"] is None else ("yes" if row["agree"] else "NO")
        table.append([row["entry"], row["protocol"].removeprefix("sglang-"), row["path"],
                      _fmt(row["static"]) if isinstance(row["static"], list) else row["static"], cell, agree])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    for r in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    lines.append("Why not (one line each):")
    seen = set()
    for res in report["entries"]:
        rt = res["runtime"]
        name = res["entry"].rsplit(".", 1)[-1]
        if "error" in rt:
            key = (name, rt["error"])
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"  {name} [{res['protocol'].removeprefix('sglang-')}] not built: {rt['error'][:220]}"
                         + (f" ({rt['at']})" if rt.get("at") else ""))
            continue
        for path, got in rt.get("paths", {}).items():
            if "error" in got:
                lines.append(f"  {name} [{res['protocol'].removeprefix('sglang-')}] {path}: {got['error'][:200]}"
                             + (f" ({got['at']})" if got.get("at") else ""))
    partial = sorted({r["entry"] for r in report["rows"] if r.get("partial_stream")})
    if partial:
        lines.append("")
        lines.append("partial = the aux tensor is a layer's hidden_states output without the residual (the sum the "
                     "next layer's add-norm makes), not the residual stream: " + ", ".join(partial))
    changed = sorted({r["entry"] for r in report["rows"] if r.get("attention_only")})
    if changed:
        lines.append("attn-only = a hybrid model built with every linear-attention / mamba / conv layer made a "
                     "full-attention layer (no state pool for those kinds here): " + ", ".join(changed))
    lines.append("")
    for protocol, c in report["counts"].items():
        lines.append(f"{protocol}: {c['entry_classes']} entry classes, {c['built']} built, {c['all_paths_ran']} "
                     f"through every path ({c['model_files_all_paths']} model files, "
                     f"{len(c['wrappers_all_paths'])} wrappers); rows compared {c['rows_compared']}, agree "
                     f"{c['rows_agree']}, disagree {c['rows_disagree']}")
        for reason, n in sorted(c["not_built"].items(), key=lambda kv: -kv[1]):
            lines.append(f"    not built: {n} x {reason}")
        for reason, n in sorted(c["path_errors"].items(), key=lambda kv: -kv[1]):
            lines.append(f"    path error: {n} x {reason}")
        b = c.get("statically_broken")
        if b:
            lines.append(f"  and {b['entry_classes']} the scan calls broken (--include-broken): {b['built']} built, "
                         f"{b['all_paths_ran']} through every path; rows compared {b['rows_compared']}, agree "
                         f"{b['rows_agree']}, disagree {b['rows_disagree']}")
    return "\n".join(lines)


def render_markdown(report: dict[str, Any]) -> str:
    """The rows as a Markdown table, one line per entry x protocol x path."""
    fw = report["framework"]
    out = [f"{_framework_name(fw)} {fw['version']}, {report['device']}"
           + (f" ({report['device_name']})" if report.get("device_name") else "")
           + f", {report['layers']} layers; ids the runner passes: "
           + "; ".join(f"{p.removeprefix('sglang-')} {_fmt(d['runner_ids'])}" for p, d in report["drafts"].items()),
           "", "| entry | file | protocol | path | static | runtime | agree |", "|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        runtime = row["runtime"]
        if isinstance(runtime, list):
            cell = _fmt(runtime) + (" partial" if row.get("partial_stream") else "") \
                + (" attn-only" if row.get("attention_only") else "")
        else:
            cell = runtime
        static_cell = _fmt(row["static"]) if isinstance(row["static"], list) else row["static"]
        agree = "-" if row["agree"] is None else ("yes" if row["agree"] else "**NO**")
        file = (row.get("file") or "").removeprefix("sglang/srt/models/").removeprefix("vllm/model_executor/models/")
        out.append(f"| {row['entry']} | {file} | {row['protocol'].removeprefix('sglang-')} | {row['path']} | "
                   f"{static_cell} | {cell} | {agree} |")
    return "\n".join(out)


# -- the whole run ---------------------------------------------------------------------


def _is_wrapper(entry: str, runtime: dict[str, Any]) -> bool:
    """A multimodal wrapper (its class says so) or a wrapper whose decoder
    layers live in an inner language model (``language_model.model.layers``)."""
    name = entry.rsplit(".", 1)[-1]
    if any(w in name for w in ("ForConditionalGeneration", "VL", "Omni")):
        return True
    path = runtime.get("layers_path") or ""
    return path.count(".") >= 2 or "language_model" in path


def run_all(framework: str, device: str, protocols: list[str], include_broken: bool, layers: int,
            jobs: int, timeout: float, memory_mib: int, draft_raws: list[dict[str, Any]],
            scan_json: str | None = None, cache_dir: str | None = None, only: list[str] | None = None,
            work_dir: str | None = None, graph: bool | None = None, family_reference: bool = False,
            progress=None) -> dict[str, Any]:
    from .adapters import Release, locate

    found_vllm = vllm_release(framework)
    if found_vllm:
        release = Release(root=found_vllm[0], version=found_vllm[1], layout="vllm")
        protocols = [p for p in protocols if p in VLLM_PROTOCOLS] or list(VLLM_PROTOCOLS)
    else:
        release = locate(framework)
        protocols = [p for p in protocols if p not in VLLM_PROTOCOLS]
    verdicts = ("ok", "broken") if include_broken else ("ok",)
    scan_error = None
    try:
        scan_result = static.scan(release.root, cache_dir=cache_dir, scan_json=scan_json)
    except Exception as exc:  # the static side is broken: run what was named, say why
        if not only:
            raise RuntimeError(f"the static scan failed ({type(exc).__name__}: {exc}); name the entry "
                               "classes with --entry, or give --scan-json") from exc
        scan_error = f"static scan failed: {type(exc).__name__}: {str(exc)[:200]}"
        scan_result = {"models": [], "protocols": [], "call_sites": []}
    present = static.protocols_of(scan_result)
    wanted = [p for p in protocols if p in present] if present else list(protocols)
    selected = static.select(scan_result, wanted, verdicts)
    if only:
        selected = [m for m in selected if any(o == m["entry"] or o == m["entry"].rsplit(".", 1)[-1]
                                               or o in m["entry"] for o in only)]
    if scan_error:
        from .derive import DeriveError, find_entry_module

        for name in only or []:
            try:
                qual = f"{find_entry_module(release.root, name)}.{name.rsplit('.', 1)[-1]}"
            except DeriveError:
                continue
            selected += [{"entry": qual, "protocol": p, "verdict": "unknown", "draft": False,
                          "file": qual.replace(".", "/").rsplit("/", 1)[0] + ".py"} for p in wanted]
    drafts: dict[str, dict[str, Any]] = {}
    by_protocol = {protocol_of_draft(raw, bool(found_vllm)): raw for raw in draft_raws}
    for protocol in wanted:
        raw, ids, source = draft_for(protocol, by_protocol.get(protocol), layers)
        drafts[protocol] = {"raw": raw, "runner_ids": ids, "source": source}
    want_graph = device == "cuda" if graph is None else graph
    paths = [p for p in PATHS if p != "cuda_graph" or want_graph]

    work = Path(work_dir or tempfile.mkdtemp(prefix="tracer-verify-all-"))
    work.mkdir(parents=True, exist_ok=True)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for model in selected:
        grouped.setdefault(model["entry"], []).append(model)
    family_of = {} if found_vllm else {
        f"sglang.srt.models.{f.module}.{e}": k for k, f in FAMILIES.items() for e in f.entries}
    job_list = []
    for index, (entry, models) in enumerate(grouped.items()):
        name = entry.rsplit(".", 1)[-1]
        out = work / f"{index:03d}-{name}.jsonl"
        out.unlink(missing_ok=True)
        worker = "tracer.verify.vllm_case" if found_vllm else "tracer.verify.worker"
        cmd = [sys.executable, "-m", worker, "--framework", release.root, "--device", device,
               "--entry", entry, "--layers", str(layers), "--out", str(out)]
        for m in models:
            ids = drafts[m["protocol"]]["runner_ids"]
            cmd += ["--protocol", f"{m['protocol']}=" + (",".join(map(str, ids)) if ids is not None else "none")]
        if want_graph:
            cmd.append("--graph")
        if family_reference and entry in family_of:
            cmd += ["--family", family_of[entry]]
        job_list.append(Job(entry, [m["protocol"] for m in models], cmd, out, work / f"{index:03d}-{name}.log"))
    env = dict(os.environ)
    package_parent = str(Path(os.path.abspath(__file__)).parent.parent.parent)
    env["PYTHONPATH"] = package_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    cpu_limit = memory_mib * 1024 * 1024 * 3 if device == "cpu" else None
    started = time.time()
    # one fork server imports torch and the framework once for every CPU worker (zygote.py)
    zygote = None if found_vllm or len(job_list) < 2 else Zygote.start(
        release.root, device, env, str(work), str(work / "zygote.log"))
    try:
        run_jobs(job_list, jobs, timeout, memory_mib, env, str(work), cpu_limit, progress, zygote)
    finally:
        if zygote is not None:
            zygote.close()

    entry_results = []
    done_info = None
    patches: dict[str, int] = {}
    stubs_seen: set = set()
    for job in job_list:
        records, done = _read_records(job)
        done_info = done_info or done
        if done:
            for patch in done.get("patches") or []:
                patches[patch] = patches.get(patch, 0) + 1
            stubs_seen.update(done.get("stubs") or [])
        for model in grouped[job.entry]:
            protocol = model["protocol"]
            record = records.get(protocol)
            if record is None:
                record = {"error": _death(job), "stage": "worker"}
            record.pop("entry", None)
            record.pop("protocol", None)
            res = {"entry": job.entry, "protocol": protocol, "verdict": model["verdict"],
                   "file": model.get("file"), "draft_head": bool(model.get("draft")),
                   "wrapper": _is_wrapper(job.entry, record), "runner_ids": drafts[protocol]["runner_ids"],
                   "worker": {"seconds": job.seconds, "peak_rss_mib": job.peak_kib // 1024, "rc": job.rc,
                              "log": job.log.name},
                   "runtime": record}
            target_raw = (record.get("config") or {}).get("raw") or {"num_hidden_layers": layers,
                                                                      "hidden_size": 64}
            res["static"] = ({"available": False, "why": scan_error} if scan_error else
                             static.predict(release.root, job.entry, target_raw, drafts[protocol]["raw"],
                                            protocol, scan_result))
            if record.get("config"):
                record["config"].pop("raw", None)
                res["config_json"] = target_raw
            entry_results.append(res)
    rows = build_rows(entry_results, paths)
    report = {
        "framework": {"root": release.root, "version": release.version, "layout": release.layout},
        "device": device,
        "device_name": None,
        "layers": layers,
        "protocols": wanted,
        "protocols_absent": [p for p in protocols if p not in wanted],
        "selection": {"verdicts": list(verdicts), "only": only or None, "scan_error": scan_error},
        "drafts": {p: {"runner_ids": d["runner_ids"], "source": d["source"], "config": d["raw"]}
                   for p, d in drafts.items()},
        "paths": paths,
        "budget": {"jobs": jobs, "timeout_s": timeout, "memory_mib": memory_mib},
        "seconds": round(time.time() - started, 1),
        "rows": rows,
        "counts": counts(entry_results, rows, paths),
        "entries": entry_results,
        "stubs": sorted(stubs_seen),
        # every patch any worker applied, with the number of workers that did
        "patches": [f"{p} [{n} workers]" for p, n in patches.items()],
        "setter_order": None,
    }
    if device == "cuda":
        report["device_name"] = _device_name(entry_results)
    return report


def restatic(report: dict[str, Any], scan_result: dict[str, Any], release_root: str | None = None) -> dict[str, Any]:
    """The static side of a saved report computed again (here, from the configs
    the workers ran and the drafts the report names), rows and counts rebuilt:
    for a run whose machine had no static engine, or to check a newer one."""
    root = release_root or report["framework"]["root"]
    for res in report["entries"]:
        draft = report["drafts"][res["protocol"]]["config"]
        target = res.get("config_json") or {"num_hidden_layers": report["layers"], "hidden_size": 64}
        res["static"] = static.predict(root, res["entry"], target, draft, res["protocol"], scan_result)
    report["rows"] = [r for r in build_rows(report["entries"], report["paths"])]
    report["counts"] = counts(report["entries"], report["rows"], report["paths"])
    report["static_computed"] = {"root": root, "tool": scan_result.get("tool")}
    return report


def _device_name(entry_results) -> str | None:
    for res in entry_results:
        name = res["runtime"].get("device_name")
        if name:
            return name
    return None


def load_drafts(paths: list[str]) -> list[dict[str, Any]]:
    return [load_json_config(p) for p in paths]
