"""The static side of ``tracer verify``: what ``tracer explain`` predicts for
the same release, entry, target config and draft config.

The harness writes the exact configs it runs (the tiny or shrunk target
config, the draft config) to a temporary folder and hands them to the static
engine, so both sides look at the same numbers. When the engine or explain
is not importable the prediction is reported as unavailable, never guessed.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any


def _scan(release_root: str) -> dict[str, Any]:
    from tracer.engine import scan_to_json

    return scan_to_json(release_root)


_SCANS: dict[str, dict[str, Any]] = {}


def predict(release_root: str, entry: str, target_raw: dict[str, Any],
            draft_raw: dict[str, Any] | None) -> dict[str, Any]:
    """{"available": bool, "effective_layers", "graph_layers", "layers_to_capture", ...}"""
    try:
        from tracer.configs import load_draft_config, load_target_config
        from tracer.explain import DEFAULT_PROTOCOL, explain_model, pick_model
    except Exception as exc:  # the static engine is not part of this install
        return {"available": False, "why": f"tracer.explain not importable ({type(exc).__name__}: {exc})"}
    try:
        if release_root not in _SCANS:
            _SCANS[release_root] = _scan(release_root)
        scan = _SCANS[release_root]
        with tempfile.TemporaryDirectory(prefix="tracer-verify-") as tmp:
            target_file = Path(tmp) / "target.json"
            target_file.write_text(json.dumps(dict(target_raw, architectures=[entry])))
            draft_file = Path(tmp) / "draft" / "config.json"
            draft_file.parent.mkdir()
            draft_file.write_text(json.dumps(draft_raw or {}))
            target = load_target_config(target_file)
            draft = load_draft_config(draft_file)
            model = pick_model(scan, target, entry, DEFAULT_PROTOCOL["name"])
            if model is None:
                return {"available": False, "why": f"the static scan found no entry {entry}"}
            root = Path(scan.get("root") or release_root)
            result = explain_model(root, model, scan.get("call_sites", []), target, draft)
    except Exception as exc:
        return {"available": False, "why": f"static prediction failed ({type(exc).__name__}: {exc})"}
    eager = result.get("effective_layers")
    graph = result.get("graph_layers")
    return {
        "available": True,
        "verdict": model.get("verdict"),
        "layers_to_capture": result.get("layers_to_capture"),
        "effective_layers": eager,
        "graph_layers": graph if graph is not None else eager,
        "graph_layers_differ": result.get("graph_layers_differ", False),
        "findings": [f.get("slug") for f in result.get("findings", [])],
        "unknowns": [u.get("why") for u in result.get("unknowns", [])][:5],
    }
