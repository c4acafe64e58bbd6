"""The static side of ``tracer verify``: what the scan says about each entry
class, and what ``tracer explain`` predicts for the same release, entry,
target config and draft config.

This is the only module of ``tracer.verify`` that imports the rest of tracer
(the scan and explain); everything else of the harness talks to it.

The harness hands over the exact configs it ran (the tiny or shrunk target
config, the draft config); they are written to a temporary folder and read by
the static engine, so both sides look at the same numbers. When the engine or
explain is not importable the prediction is reported as unavailable, never
guessed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any


def scan_to_json(release_root: str, protocols=None, cache_dir: str | None = None) -> dict[str, Any]:
    from tracer.api import scan_to_json as scan_json_of

    return scan_json_of(release_root, protocols=protocols, cache_dir=cache_dir)


_SCANS: dict[str, dict[str, Any]] = {}


def scan(release_root: str, cache_dir: str | None = None, scan_json: str | None = None) -> dict[str, Any]:
    """The scan JSON of the release (once per process; or read from ``scan_json``)."""
    if release_root not in _SCANS:
        if scan_json:
            _SCANS[release_root] = json.loads(Path(scan_json).read_text())
        else:
            _SCANS[release_root] = scan_to_json(release_root, cache_dir=cache_dir)
    return _SCANS[release_root]


def select(scan_result: dict[str, Any], protocols, verdicts=("ok",)) -> list[dict[str, Any]]:
    """The scan's models of these protocols and verdicts, in scan order:
    {entry, protocol, verdict, draft, file, reason, findings, state_owner}."""
    out = []
    for model in scan_result.get("models", []):
        if model.get("protocol") in protocols and model.get("verdict") in verdicts:
            out.append({k: model.get(k) for k in ("entry", "protocol", "verdict", "draft", "file", "line",
                                                    "reason", "findings", "state_owner")})
    return out


def protocols_of(scan_result: dict[str, Any]) -> list[str]:
    return list(scan_result.get("protocols", []))


def call_sites(scan_result: dict[str, Any], protocol: str) -> list[dict[str, Any]]:
    return [c for c in scan_result.get("call_sites", []) if c.get("protocol") == protocol]


def predict(release_root: str, entry: str, target_raw: dict[str, Any],
            draft_raw: dict[str, Any] | None, protocol: str = "sglang-eagle3",
            scan_result: dict[str, Any] | None = None) -> dict[str, Any]:
    """{"available": bool, "effective_layers", "graph_layers", "layers_to_capture", ...}: what
    `tracer explain` says for the same tree, entry, configs and protocol (the pack says where
    the draft keeps its ids)."""
    try:
        import dataclasses

        from tracer.config.packs import load_protocols
        from tracer.effective.annotate import explain
        from tracer.present.scan_json import from_json
    except Exception as exc:  # the static engine is not part of this install
        return {"available": False, "why": f"tracer's explain not importable ({type(exc).__name__}: {exc})"}
    try:
        result_scan = scan_result if scan_result is not None else scan(release_root)
        typed = from_json(result_scan)
        if Path(release_root).is_dir():  # the tree being run (a saved scan may name where it was made)
            typed = dataclasses.replace(typed, root=str(Path(release_root).resolve()))
        packs = load_protocols()
        with tempfile.TemporaryDirectory(prefix="tracer-verify-") as tmp:
            target_file = Path(tmp) / "target.json"
            target_file.write_text(json.dumps(dict(target_raw, architectures=[entry.rsplit(".", 1)[-1]])))
            draft_file = Path(tmp) / "draft" / "config.json"
            draft_file.parent.mkdir()
            draft_file.write_text(json.dumps(draft_raw or {}))
            model, result = explain(typed, packs, target_file, draft_file, entry, protocol=protocol)
        if model is None:
            return {"available": False, "why": f"the static scan found no entry {entry} for {protocol}"}
    except Exception as exc:
        return {"available": False, "why": f"static prediction failed ({type(exc).__name__}: {exc})"}
    eager = result.get("effective_layers")
    graph = result.get("graph_layers")
    return {
        "available": True,
        "verdict": model.verdict,
        "layers_to_capture": result.get("layers_to_capture"),
        "effective_layers": eager,
        "graph_layers": graph if graph is not None else eager,
        "graph_layers_differ": result.get("graph_layers_differ", False),
        "findings": [f.get("slug") for f in result.get("findings", [])],
        "unknowns": [u.get("why") for u in result.get("unknowns", [])][:5],
    }
