"""The scan JSON (docs/scan-json.md, docs/scan-json.schema.json): written and read
here, and nowhere else. Every other stage works on the typed results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tracer.model.findings import Finding
from tracer.model.kinds import CHAIN_VERDICTS, GRAPH_CAPTURES
from tracer.model.results import (
    Alternative,
    CallSite,
    Framework,
    Hop,
    InputProblem,
    ModelResult,
    ScanResult,
    ScanStats,
)

JSONDict = dict[str, Any]
# 2: a finding's `col` is 1-based, as in the text, SARIF and GitHub outputs (1 had it 0-based)
SCHEMA_VERSION = 2


def finding_to_json(f: Finding) -> JSONDict:
    data: JSONDict = {"slug": f.slug, "severity": f.severity, "protocol": f.protocol, "entry": f.entry,
                      "entries": list(f.entries), "file": f.file, "line": f.line, "col": f.col + 1,
                      "message": f.message, "hint": f.hint, "chain": list(f.chain)}
    if f.fingerprint:
        data["fingerprint"] = f.fingerprint
    return data


def finding_from_json(d: Mapping[str, Any], schema: int = SCHEMA_VERSION) -> Finding:
    """``schema``: the version of the document the finding comes from (1: `col` 0-based)."""
    col = int(d.get("col") or 0) - (1 if schema >= 2 else 0)
    return Finding(d["slug"], d.get("severity") or "error", d.get("protocol") or "", d.get("entry"), d.get("file") or "",
                   int(d.get("line") or 0), max(col, 0), d.get("message") or "", d.get("hint") or "",
                   tuple(d.get("chain") or ()), tuple(d.get("entries") or ()), d.get("fingerprint") or "")


def hop_to_json(hop: Hop) -> JSONDict:
    data: JSONDict = {"kind": hop.kind, "qualname": hop.qualname, "file": hop.file, "line": hop.line,
                      "resolved_by": hop.resolved_by}
    if hop.call_line:
        data.update(call_file=hop.call_file, call_line=hop.call_line, passes_ids=hop.passes_ids)
    if hop.reason:
        data["reason"] = hop.reason
    return data


def hop_from_json(d: Mapping[str, Any]) -> Hop:
    return Hop(d.get("kind") or "unresolved", d.get("qualname") or "", d.get("file") or "", int(d.get("line") or 0), d.get("resolved_by") or "",
               d.get("call_file") or "", int(d.get("call_line") or 0), d.get("passes_ids"), d.get("reason") or "")


def model_to_json(m: ModelResult) -> JSONDict:
    data: JSONDict = {
        "entry": m.entry, "file": m.file, "line": m.line, "protocol": m.protocol,
        "verdict": m.verdict, "reason": m.reason,
        "chain": [hop_to_json(h) for h in m.chain],
        "state_owner": m.state_owner, "state_attribute": m.state_attribute,
        "findings": list(m.slugs),
        "draft": m.draft,
    }
    if m.chain_verdict is not None:
        data["chain_verdict"] = m.chain_verdict
    if m.alternatives:
        data["alternatives"] = [{"condition": a.condition, "verdict": a.verdict, "entry": a.entry,
                                 "default": a.default} for a in m.alternatives]
    if m.effective_layers is not None:
        data["effective_layers"] = list(m.effective_layers)
    if m.graph_layers is not None:
        data["graph_layers"] = list(m.graph_layers)
    if m.explanation is not None:
        data["explain"] = m.explanation
    if m.graph_capture is not None:
        data["graph_capture"] = m.graph_capture
        if m.graph_capture_site:
            data["graph_capture_site"] = m.graph_capture_site
    return data


def findings_by_entry(findings: Sequence[Finding]) -> dict[tuple[str, str], list[Finding]]:
    """(protocol, entry) -> its findings, in order: one pass, not one per model."""
    index: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        for entry in dict.fromkeys(f.entries or (f.entry,)):
            index.setdefault((f.protocol, entry or ""), []).append(f)
    return index


def model_from_json(d: Mapping[str, Any], findings: Sequence[Finding] | Mapping[tuple[str, str], list[Finding]]
                    ) -> ModelResult:
    """``findings``: the scan's (or their ``findings_by_entry`` index)."""
    index = findings if isinstance(findings, Mapping) else findings_by_entry(findings)
    protocol = d.get("protocol")
    own = tuple(index.get((protocol, d["entry"]), ())) if isinstance(protocol, str) else ()
    slugs = set(d.get("findings") or ())
    own = tuple(f for f in own if f.slug in slugs)
    effective = d.get("effective_layers")
    graph = d.get("graph_layers")
    return ModelResult(
        entry=d["entry"], file=d.get("file") or "", line=int(d.get("line") or 0), protocol=d.get("protocol") or "",
        verdict=d.get("verdict") or "unknown", reason=d.get("reason") or "", chain=tuple(hop_from_json(h) for h in d.get("chain") or ()),
        state_owner=d.get("state_owner") or "", state_attribute=d.get("state_attribute") or "", findings=own,
        draft=bool(d.get("draft")),
        chain_verdict=d.get("chain_verdict") if d.get("chain_verdict") in CHAIN_VERDICTS else None,
        alternatives=tuple(Alternative(a["condition"], a["verdict"], a.get("entry", ""), bool(a.get("default")))
                           for a in d.get("alternatives") or ()),
        effective_layers=tuple(effective) if isinstance(effective, list) else None,
        graph_layers=tuple(graph) if isinstance(graph, list) else None,
        explanation=d.get("explain"),
        graph_capture=d.get("graph_capture") if d.get("graph_capture") in GRAPH_CAPTURES else None,
        graph_capture_site=d.get("graph_capture_site") or "",
        extra_slugs=tuple(sorted(slugs - {f.slug for f in own})),
    )


def call_site_to_json(s: CallSite) -> JSONDict:
    return {"protocol": s.protocol, "caller": s.caller, "file": s.file, "line": s.line,
            "passes_ids": s.passes_ids, "before_graph_capture": s.before_graph_capture, "order": s.order,
            **({} if s.graph_capture_reached is None else {"graph_capture_reached": s.graph_capture_reached})}


def call_site_from_json(d: Mapping[str, Any]) -> CallSite:
    return CallSite(d.get("protocol") or "", d.get("caller") or "", d.get("file") or "", int(d.get("line") or 0),
                    int(d.get("col") or 0), d.get("passes_ids"), d.get("before_graph_capture"), d.get("order"),
                    d.get("graph_capture_reached"))


def stats_to_json(stats: ScanStats) -> JSONDict:
    data: JSONDict = {"files_total": stats.files_total, "files_parsed": stats.files_parsed,
                      "files_outlined": stats.files_outlined, "functions_parsed": stats.functions_parsed,
                      "cache_hits": stats.cache_hits, "seconds": stats.seconds,
                      "chains_traced": stats.chains_traced, "chains_reused": stats.chains_reused,
                      "jedi_questions": stats.jedi_questions, "jedi_answers": stats.jedi_answers}
    if stats.result_cache:
        data["result_cache"] = True
    return data


def stats_from_json(d: Mapping[str, Any]) -> ScanStats:
    return ScanStats(int(d.get("files_total") or 0), int(d.get("files_parsed") or 0),
                     int(d.get("files_outlined") or 0), int(d.get("functions_parsed") or 0),
                     int(d.get("cache_hits") or 0), float(d.get("seconds") or 0.0), bool(d.get("result_cache")),
                     int(d.get("chains_traced") or 0), int(d.get("chains_reused") or 0),
                     int(d.get("jedi_questions") or 0), int(d.get("jedi_answers") or 0))


def to_json(result: ScanResult) -> JSONDict:
    data: JSONDict = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "tracer", "version": result.tool_version},
        "root": result.root,
        "framework": {"name": result.framework.name, "version": result.framework.version,
                      "package_root": result.framework.package_root,
                      **({"fork_of": result.framework.fork_of} if result.framework.fork_of else {})},
        "protocols": list(result.protocols),
        "protocols_absent": list(result.absent_protocols),
        "models": [model_to_json(m) for m in result.models],
        "call_sites": [call_site_to_json(s) for s in result.call_sites],
        "findings": [finding_to_json(f) for f in result.findings],
        "input_errors": [{"file": p.path, "line": p.line, "reason": p.reason} for p in result.input_errors],
        "stats": stats_to_json(result.stats),
        "suppressed": [finding_to_json(f) for f in result.suppressed],
    }
    if result.notes:
        data["notes"] = list(result.notes)
    return data


class ScanJsonError(ValueError):
    """A scan JSON that is not one (missing keys, wrong types)."""


def scan_json_text(result: ScanResult) -> str:
    """`tracer scan --format json`."""
    return json.dumps(to_json(result), indent=2) + "\n"


def json_list_text(rows: list[Any]) -> str:
    """A list of plain rows as the JSON the commands print (`scan --statistics --format json`)."""
    return json.dumps(rows, indent=2) + "\n"


def from_json(data: Any) -> ScanResult:
    """The typed result of a scan JSON (``tracer report --from scan.json``)."""
    try:
        schema = int(data.get("schema_version") or 1)
        findings = tuple(finding_from_json(f, schema) for f in data.get("findings") or ())
        index = findings_by_entry(findings)
        framework = data.get("framework") or {}
        return ScanResult(
            root=str(data.get("root") or ""),
            framework=Framework(framework.get("name") or "", framework.get("version") or "",
                                framework.get("package_root") or "", framework.get("fork_of") or ""),
            protocols=tuple(data.get("protocols") or ()),
            models=tuple(model_from_json(m, index) for m in data.get("models") or ()),
            call_sites=tuple(call_site_from_json(s) for s in data.get("call_sites") or ()),
            findings=findings,
            input_errors=tuple(InputProblem(e.get("file") or "", int(e.get("line") or 0), e.get("reason") or "")
                               for e in data.get("input_errors") or ()),
            stats=stats_from_json(data.get("stats") or {}),
            absent_protocols=tuple(data.get("protocols_absent") or ()),
            suppressed=tuple(finding_from_json(f, schema) for f in data.get("suppressed") or ()),
            tool_version=str((data.get("tool") or {}).get("version") or ""),
            notes=tuple(str(n) for n in data.get("notes") or ()),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ScanJsonError(f"not a tracer scan JSON ({type(exc).__name__}: {exc})") from None
