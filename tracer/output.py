"""Reports stage (text formats): text, json, sarif, github, from the scan JSON."""

from __future__ import annotations

import json
from collections import Counter

from tracer import __version__
from tracer.findings import RULES, SEVERITY_ORDER

VERDICT_ORDER = {"broken": 0, "unknown": 1, "ok": 2, "missing": 3}


def _short(qualname: str, keep: int = 2) -> str:
    return ".".join(qualname.split(".")[-keep:])


def format_text(scan: dict, show_chains: bool = True, show_missing: bool = False, color: bool = False) -> str:
    lines: list[str] = []
    paint = _painter(color)
    shown = [f for f in scan["findings"] if show_missing or f["severity"] != "info"]
    for f in shown:
        where = f"{f['file']}:{f['line']}:{f['col'] + 1}"
        lines.append(f"{paint(where, 'bold')}: {paint(f['slug'], f['severity'])} [{f['severity']}] {f['message']}")
        extra = len(f.get("entries") or []) - 1
        if extra > 0:
            lines.append(f"    affects {len(f['entries'])} entry classes: "
                         + ", ".join(_short(e, 1) for e in f["entries"][:6]) + (" ..." if extra > 5 else ""))
        lines.append(f"    hint: {f['hint']}")
    if shown:
        lines.append("")
    if show_chains:
        for proto in scan["protocols"]:
            models = sorted((m for m in scan["models"] if m["protocol"] == proto),
                            key=lambda m: (bool(m.get("draft")), VERDICT_ORDER.get(m["verdict"], 9), m["entry"]))
            lines.append(paint(f"== {proto}", "bold"))
            missing = []
            for m in models:
                if m["verdict"] == "missing" and not show_missing:
                    missing.append(_short(m["entry"], 1))
                    continue
                tag = "  [draft head]" if m.get("draft") else ""
                lines.append(f"{paint(m['verdict'].ljust(7), m['verdict'])} {m['entry']}  ({m['file']}:{m['line']}){tag}")
                if m["reason"] and m["verdict"] != "ok":
                    lines.append(f"        why: {m['reason']}")
                for hop in m["chain"]:
                    label = hop["qualname"] if hop["kind"] != "write" else hop["qualname"]
                    how = hop.get("reason") or hop["resolved_by"]
                    lines.append(f"        {hop['kind']:<10} {_short(label)}  {hop['file']}:{hop['line']}  [{how}]")
            if missing:
                lines.append(f"missing {len(missing)} entry classes without {proto}'s setter: "
                             + ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")
                             + "  (--show-missing lists them)")
            lines.append("")
        sites = scan.get("call_sites") or []
        if sites:
            lines.append(paint("== runner call sites", "bold"))
            for s in sites:
                order = {True: "before graph capture", False: "AFTER graph capture", None: "order unknown"}[
                    s["before_graph_capture"]]
                ids = "with ids" if s["passes_ids"] else "WITHOUT ids"
                lines.append(f"  {s['protocol']}: {_short(s['caller'])}  {s['file']}:{s['line']}  {ids}, {order}")
            lines.append("")
    lines.append(summary_line(scan))
    return "\n".join(lines) + "\n"


def summary_line(scan: dict) -> str:
    parts = []
    for proto in scan["protocols"]:
        counts = Counter(m["verdict"] for m in scan["models"] if m["protocol"] == proto)
        parts.append(f"{proto}: " + ", ".join(f"{counts[v]} {v}" for v in ("ok", "broken", "unknown", "missing")))
    by_sev = Counter(f["severity"] for f in scan["findings"])
    findings = ", ".join(f"{by_sev[s]} {s}" for s in ("error", "warning", "info") if by_sev[s]) or "no findings"
    for proto in scan.get("protocols_absent") or []:
        parts.append(f"{proto}: not in this release")
    stats = scan.get("stats", {})
    if stats.get("result_cache"):
        return (f"{'; '.join(parts)}. Findings: {findings}. No file changed since the last scan: "
                f"result from the cache in {stats.get('seconds', 0)} s.")
    return (f"{'; '.join(parts)}. Findings: {findings}. "
            f"{stats.get('files_parsed', 0)} files parsed, {stats.get('files_outlined', 0)} outlined, "
            f"{stats.get('cache_hits', 0)} from cache, of {stats.get('files_total', 0)}, in {stats.get('seconds', 0)} s.")


def _painter(color: bool):
    codes = {"error": "31", "broken": "31", "warning": "33", "unknown": "33", "info": "36", "missing": "36",
             "ok": "32", "bold": "1"}

    def paint(text: str, kind: str) -> str:
        if not color or kind not in codes:
            return text
        return f"\x1b[{codes[kind]}m{text}\x1b[0m"
    return paint


def format_json(scan: dict) -> str:
    return json.dumps(scan, indent=2, sort_keys=False) + "\n"


def format_github(scan: dict) -> str:
    level = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for f in scan["findings"]:
        message = f"{f['message']} (hint: {f['hint']})".replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        out.append(f"::{level[f['severity']]} file={f['file']},line={f['line']},col={f['col'] + 1},"
                   f"title=tracer {f['slug']}::{message}")
    return "\n".join(out) + ("\n" if out else "")


def format_sarif(scan: dict) -> str:
    level = {"error": "error", "warning": "warning", "info": "note"}
    rules = [
        {"id": r.slug, "name": r.slug, "shortDescription": {"text": r.summary},
         "fullDescription": {"text": r.what},
         "help": {"text": f"{r.why}\nFix: {r.fix}", "markdown": f"**Why:** {r.why}\n\n**Fix:** {r.fix}"},
         "defaultConfiguration": {"level": level[r.severity]}}
        for r in RULES.values()
    ]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in scan["findings"]:
        results.append({
            "ruleId": f["slug"], "ruleIndex": index[f["slug"]], "level": level[f["severity"]],
            "message": {"text": f"{f['message']} Hint: {f['hint']}"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f["file"], "uriBaseId": "SRCROOT"},
                "region": {"startLine": max(1, f["line"]), "startColumn": f["col"] + 1},
            }}],
            "partialFingerprints": {"tracer/v1": f"{f['slug']}:{f.get('entry') or ''}:{f['file']}"},
            "properties": {"protocol": f["protocol"], "entries": f.get("entries", []), "chain": f.get("chain", [])},
        })
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tracer", "version": __version__, "informationUri":
                                "https://pypi.org/project/tracer/", "rules": rules}},
            "originalUriBaseIds": {"SRCROOT": {"uri": "file://" + scan["root"].rstrip("/") + "/"}},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2) + "\n"


def exit_code(scan: dict, fail_on: str) -> int:
    if fail_on == "never":
        return 0
    threshold = SEVERITY_ORDER[fail_on]
    return 1 if any(SEVERITY_ORDER[f["severity"]] >= threshold for f in scan["findings"]) else 0
