"""GitHub Actions workflow commands (`::error file=...,line=...::message`).

GitHub shows at most 10 annotations of a type per step and 50 per job, so the
format annotates what needs a look: errors and warnings (info only for a rule
selected by name, or with --fail-on info), errors first, at most one annotation
per location and at most 10 per level (9 notices: the summary is the tenth), and
ends with one summary notice that says how many were left out and where to see
them all (SARIF, --format text).
"""

from __future__ import annotations

from collections.abc import Collection

from tracer.model.escape import printable
from tracer.model.findings import Finding
from tracer.model.kinds import SEVERITY_ORDER
from tracer.model.results import ScanResult

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}
PER_LEVEL = 10  # GitHub shows this many annotations of a level per step


def escape_data(text: str) -> str:
    """The message part of a workflow command, escaped as GitHub documents (%, CR, LF);
    any other control character (ESC, NUL, a bidi override) as a visible escape."""
    return printable(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A property value (file=..., title=...), escaped as GitHub documents."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotated(findings: Collection[Finding], info_slugs: Collection[str] = (), show_info: bool = False) -> list[Finding]:
    """The findings that get an annotation: most severe first, one per file:line:col."""
    chosen: dict[tuple[str, int, int], Finding] = {}
    for f in sorted(findings, key=lambda f: (-SEVERITY_ORDER[f.severity], f.sort_key())):
        if f.severity == "info" and not (show_info or f.slug in info_slugs):
            continue
        chosen.setdefault((f.file, f.line, f.col), f)
    return list(chosen.values())


def annotation(f: Finding) -> str:
    more = f" Affects {len(f.entries)} entry classes." if len(f.entries) > 1 else ""
    message = escape_data(f"{f.message}{more} (hint: {f.hint})")
    return (f"::{LEVEL[f.severity]} file={escape_property(f.file)},line={f.line},col={f.col + 1},"
            f"title={escape_property('tracer ' + f.slug)}::{message}")


def capped(chosen: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(annotated, left out): at most PER_LEVEL per level, PER_LEVEL - 1 notices (the summary is one)."""
    kept: list[Finding] = []
    left: list[Finding] = []
    used: dict[str, int] = {}
    for f in chosen:
        level = LEVEL[f.severity]
        room = PER_LEVEL - (1 if level == "notice" else 0)
        if used.get(level, 0) < room:
            used[level] = used.get(level, 0) + 1
            kept.append(f)
        else:
            left.append(f)
    return kept, left


def format_github(scan: ScanResult, info_slugs: Collection[str] = (), show_info: bool = False,
                  summary: str | None = None) -> str:
    from tracer.present.text import findings_count, summary_line

    chosen, capped_out = capped(annotated(scan.findings, info_slugs, show_info))
    out = [annotation(f) for f in chosen]
    said = summary if summary is not None else summary_line(scan)
    if capped_out:
        said += (f" Annotated: {findings_count(chosen)}; not annotated: {findings_count(capped_out)} (GitHub shows "
                 f"{PER_LEVEL} per level); --format sarif (code scanning) or --format text lists them all.")
    else:
        left = len(scan.findings) - len(chosen)
        if left:
            said += f" Annotated: {findings_count(chosen)}; {left} more not annotated (info, or a place already annotated)."
    out.append(f"::notice title={escape_property('tracer summary')}::{escape_data(said)}")
    return "\n".join(out) + "\n"
