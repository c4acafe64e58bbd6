"""SARIF 2.1.0: the catalogue is the driver's rules, each finding a result."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracer.checks import CATALOGUE
from tracer.model.results import ScanResult

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def sarif_rules() -> list[dict[str, Any]]:
    return [
        {"id": r.slug, "name": r.slug, "shortDescription": {"text": r.summary},
         "fullDescription": {"text": r.what},
         "help": {"text": f"{r.why}\nFix: {r.fix}", "markdown": f"**Why:** {r.why}\n\n**Fix:** {r.fix}"},
         "defaultConfiguration": {"level": LEVEL[r.severity]}}
        for r in CATALOGUE.values()
    ]


def sarif_fix(description: str, uri: str, replacements: list[tuple[int, int, str]]) -> dict[str, Any]:
    """A SARIF ``fix``: whole lines ``start``..``end`` (1-based; end < start inserts) become the text."""
    return {"description": {"text": description},
            "artifactChanges": [{"artifactLocation": {"uri": uri, "uriBaseId": "SRCROOT"}, "replacements": [
                {"deletedRegion": {"startLine": start, "startColumn": 1, "endLine": max(start, end + 1),
                                   "endColumn": 1}, "insertedContent": {"text": text}}
                for start, end, text in replacements]}]}


def format_sarif(scan: ScanResult, tool_version: str = "",
                 fixes: Mapping[tuple[str, str, int], list[dict[str, Any]]] | None = None) -> str:
    """``fixes``: (slug, file, line) -> the finding's verified SARIF fixes (scan --fix/--diff)."""
    rules = sarif_rules()
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in scan.findings:
        results.append({
            "ruleId": f.slug, "ruleIndex": index[f.slug], "level": LEVEL[f.severity],
            "message": {"text": f"{f.message} Hint: {f.hint}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.file, "uriBaseId": "SRCROOT"},
                "region": {"startLine": max(1, f.line), "startColumn": f.col + 1},
            }}],
            "partialFingerprints": {"tracer/v1": f"{f.slug}:{f.entry or ''}:{f.file}"},
            "properties": {"protocol": f.protocol, "entries": list(f.entries), "chain": list(f.chain)},
        })
        if fixes and (f.slug, f.file, f.line) in fixes:
            results[-1]["fixes"] = fixes[(f.slug, f.file, f.line)]
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tracer", "version": tool_version or scan.tool_version,
                                "informationUri": "https://github.com/tracer-dev/tracer", "rules": rules}},
            "originalUriBaseIds": {"SRCROOT": {"uri": "file://" + scan.root.rstrip("/") + "/"}},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"
