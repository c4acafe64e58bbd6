"""Each model's verdict across releases, and where it changed (history.json, history.txt)."""

from __future__ import annotations

import json
from pathlib import Path

from tracer.present.files import write_text_file
from tracer.present.sweep_page import real_changes as _real_changes
from tracer.sweep.run import Sweep


def _finding_key(f: dict) -> str:
    # file and slug, not the line: lines move between releases without meaning anything
    return f"{f['slug']} {f['file']}"


def build_history(sweep: Sweep) -> dict:
    scanned = [r for r in sweep.releases if r.scan is not None]
    versions = [r.version for r in scanned]
    rows: dict[tuple[str, str], dict] = {}
    for release in scanned:
        for model in (release.scan or {})["models"]:
            key = (model["entry"], model["protocol"])
            row = rows.setdefault(key, {"entry": model["entry"], "protocol": model["protocol"], "cells": {}})
            row["cells"][release.version] = model
    models = []
    for (entry, protocol), row in sorted(rows.items()):
        verdicts, changes = {}, []
        previous = None  # (version, verdict, finding keys)
        for version in versions:
            model = row["cells"].get(version)
            verdict = model["verdict"] if model else "absent"
            verdicts[version] = verdict
            keys = {_finding_key(f): f for f in (model or {}).get("findings", [])}
            if previous is not None and previous[1] != verdict:
                changes.append({
                    "release": version, "previous_release": previous[0],
                    "from": previous[1], "to": verdict, "reason": model["reason"] if model else "",
                    "findings_appeared": [_brief(keys[k]) for k in sorted(set(keys) - set(previous[2]))],
                    "findings_disappeared": [_brief(previous[2][k]) for k in sorted(set(previous[2]) - set(keys))],
                })
            previous = (version, verdict, keys)
        latest = row["cells"].get(versions[-1]) if versions else None
        models.append({"entry": entry, "protocol": protocol, "verdicts": verdicts, "changes": changes,
                       "reasons": {v: m["reason"] for v, m in row["cells"].items() if m["reason"]},
                       "latest": latest["verdict"] if latest else "absent"})
    return {
        "tool": "tracer sweep", "package": sweep.package, "releases": versions,
        "failed": [{"release": r.version, "stage": r.failed_stage, "reason": r.reason}
                   for r in sweep.releases if r.failed_stage],
        "protocols": sorted({m["protocol"] for m in models}),
        "per_release": {r.version: {"seconds": r.seconds, "archive": Path(r.archive).name if r.archive else "",
                                    "sha256": r.sha256, "stats": (r.scan or {})["stats"],
                                    "protocols_absent": (r.scan or {})["protocols_absent"],
                                    "counts": _counts((r.scan or {})["models"])} for r in scanned},
        "models": models, "stats": sweep.stats,
    }


def _brief(f: dict) -> dict:
    return {"slug": f["slug"], "file": f["file"], "line": f["line"], "message": f["message"]}


def _counts(models: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for m in models:
        counts[m["verdict"]] = counts.get(m["verdict"], 0) + 1
    return counts


def history_text(history: dict) -> str:
    lines = [f"{history['package']}: {len(history['releases'])} releases scanned"
             + (f" ({history['releases'][0]} .. {history['releases'][-1]})" if history["releases"] else "")]
    for version in history["releases"]:
        counts = history["per_release"][version]["counts"]
        lines.append(f"  {version:<14} " + "  ".join(f"{k} {counts[k]}" for k in sorted(counts)))
    changed = [m for m in history["models"] if _real_changes(m)]
    lines.append("")
    lines.append(f"{len(changed)} of {len(history['models'])} entry x protocol chains changed verdict "
                 "(a model added or removed is not a change):")
    for model in changed:
        lines.append(f"{model['entry']} [{model['protocol']}]")
        for c in model["changes"]:
            if "absent" in (c["from"], c["to"]):
                lines.append(f"  {c['release']}: {'added' if c['from'] == 'absent' else 'removed'}"
                             + (f" ({c['to']})" if c["to"] != "absent" else ""))
                continue
            lines.append(f"  {c['previous_release']} -> {c['release']}: {c['from']} -> {c['to']}"
                         + (f"  ({c['reason']})" if c["reason"] and c["to"] in ("broken", "unknown") else ""))
            for f in c["findings_appeared"]:
                lines.append(f"    + {f['slug']} {f['file']}:{f['line']}")
            for f in c["findings_disappeared"]:
                lines.append(f"    - {f['slug']} {f['file']}:{f['line']}")
    if history["failed"]:
        lines.append("")
        lines.append("releases not scanned:")
        for f in history["failed"]:
            lines.append(f"  {f['release']}: {f['stage']} failed: {f['reason']}")
    stats = history["stats"]
    if stats:
        lines.append("")
        lines.append(f"download+unpack {stats.get('download_seconds')} s, scan {stats.get('scan_seconds')} s "
                     f"with {stats.get('workers')} workers, total {stats.get('total_seconds')} s")
    return "\n".join(lines) + "\n"


def write_history(history: dict, out: Path, page: str) -> dict[str, Path]:
    paths = {"json": out / "history.json", "text": out / "history.txt", "html": out / "index.html"}
    write_text_file(paths["json"], json.dumps(history, indent=1) + "\n")
    write_text_file(paths["text"], history_text(history))
    write_text_file(paths["html"], page)
    return paths
