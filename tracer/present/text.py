"""Text output of a scan: findings (`path:line:col: slug [severity] message`), chains, summary."""

from __future__ import annotations

from collections import Counter

from tracer.model.escape import printable
from tracer.model.results import ScanResult

VERDICT_ORDER = {"broken": 0, "unknown": 1, "ok": 2, "missing": 3}


def _short(qualname: str, keep: int = 2) -> str:
    return ".".join(qualname.split(".")[-keep:])


def format_text(scan: ScanResult, show_chains: bool = True, show_missing: bool = False, color: bool = False) -> str:
    lines: list[str] = []
    paint = _painter(color)
    shown = [f for f in scan.findings if show_missing or f.severity != "info"]
    for f in shown:
        where = f"{printable(f.file)}:{f.line}:{f.col + 1}"
        lines.append(f"{paint(where, 'bold')}: {paint(f.slug, f.severity)} [{f.severity}] {printable(f.message)}")
        extra = len(f.entries) - 1
        if extra > 0:
            lines.append(f"    affects {len(f.entries)} entry classes: "
                         + ", ".join(printable(_short(e, 1)) for e in f.entries[:6]) + (" ..." if extra > 5 else ""))
        lines.append(f"    hint: {printable(f.hint)}")
    if shown:
        lines.append("")
    if show_chains:
        for proto in scan.protocols:
            models = sorted((m for m in scan.models if m.protocol == proto),
                            key=lambda m: (m.draft, VERDICT_ORDER.get(m.verdict, 9), m.entry))
            lines.append(paint(f"== {proto}", "bold"))
            missing = []
            for m in models:
                if m.verdict == "missing" and not show_missing:
                    missing.append(printable(_short(m.entry, 1)))
                    continue
                tag = "  [draft head]" if m.draft else ""
                lines.append(f"{paint(m.verdict.ljust(7), m.verdict)} {printable(m.entry)}  "
                             f"({printable(m.file)}:{m.line}){tag}")
                if m.reason and m.verdict != "ok":
                    lines.append(f"        why: {printable(m.reason)}")
                for hop in m.chain:
                    how = hop.reason or hop.resolved_by
                    lines.append(f"        {hop.kind:<10} {printable(_short(hop.qualname))}  {printable(hop.file)}:{hop.line}"
                                 f"  [{printable(how)}]")
            if missing:
                lines.append(f"missing {len(missing)} entry classes without {proto}'s setter: "
                             + ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")
                             + "  (--show-missing lists them)")
            lines.append("")
        if scan.call_sites:
            lines.append(paint("== runner call sites", "bold"))
            for s in scan.call_sites:
                order = {True: "before graph capture", False: "AFTER graph capture", None: "order unknown"}[
                    s.before_graph_capture]
                ids = "with ids" if s.passes_ids else "WITHOUT ids"
                lines.append(f"  {s.protocol}: {printable(_short(s.caller))}  {printable(s.file)}:{s.line}  {ids}, {order}")
            lines.append("")
    lines.append(summary_line(scan))
    return "\n".join(lines) + "\n"


def summary_line(scan: ScanResult) -> str:
    parts = []
    for proto in scan.protocols:
        counts = Counter(m.verdict for m in scan.models if m.protocol == proto)
        parts.append(f"{proto}: " + ", ".join(f"{counts[v]} {v}" for v in ("ok", "broken", "unknown", "missing")))
    by_sev = Counter(f.severity for f in scan.findings)
    findings = ", ".join(f"{by_sev[s]} {s}" for s in ("error", "warning", "info") if by_sev[s]) or "no findings"
    for proto in scan.absent_protocols:
        parts.append(f"{proto}: not in this release")
    stats = scan.stats
    if stats.result_cache:
        return (f"{'; '.join(parts)}. Findings: {findings}. No file changed since the last scan: "
                f"result from the cache in {stats.seconds} s.")
    return (f"{'; '.join(parts)}. Findings: {findings}. "
            f"{stats.files_parsed} files parsed, {stats.files_outlined} outlined, "
            f"{stats.cache_hits} from cache, of {stats.files_total}, in {stats.seconds} s.")


def _painter(color: bool):  # type: ignore[no-untyped-def]
    codes = {"error": "31", "broken": "31", "warning": "33", "unknown": "33", "info": "36", "missing": "36",
             "ok": "32", "bold": "1"}

    def paint(text: str, kind: str) -> str:
        if not color or kind not in codes:
            return text
        return f"\x1b[{codes[kind]}m{text}\x1b[0m"
    return paint
