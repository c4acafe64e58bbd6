"""Text output of a scan, in a linter's shape (ruff's): the findings first, most
severe first, each once (`path:line:col: slug [severity] message`); then the
verdicts that need attention (broken, unknown) per protocol; then a summary that
names what was scanned and counts target models and draft heads apart.

`ok` chains are printed hop by hop only when asked (``show_chains``: `scan
--show-chains` / `-v`); ``quiet`` keeps the findings and the summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from tracer.model.escape import printable
from tracer.model.findings import Finding
from tracer.model.results import ModelResult, ScanResult

VERDICT_ORDER = {"broken": 0, "unknown": 1, "ok": 2, "missing": 3, "draft": 4}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
ATTENTION = ("broken", "unknown")
NAMES_SHOWN = 8  # names listed on a line that summarises many entry classes


@dataclass(frozen=True)
class TextOptions:
    show_chains: bool = False  # every model's chain hop by hop, ok ones too
    show_missing: bool = False  # models without the setter one by one
    show_info: bool = False  # every info finding (--fail-on info)
    info_slugs: frozenset[str] = field(default=frozenset())  # info findings of these rules (selected by name)
    quiet: bool = False  # findings and the summary only
    color: bool = False
    protocol_order: Sequence[str] = ()  # protocols named here come first, in this order
    statistics: bool = False  # counts per rule instead of the findings (ruff's --statistics)


def plural(count: int, word: str, many: str = "") -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _short(qualname: str, keep: int = 2) -> str:
    return ".".join(qualname.split(".")[-keep:])


def shown_findings(scan: ScanResult, options: TextOptions) -> list[Finding]:
    """The findings the output prints: errors, then warnings, then (when asked) info; each once."""
    seen: set[tuple[str, int, int, str, str]] = set()
    shown = []
    for f in sorted(scan.findings, key=lambda f: (SEVERITY_RANK[f.severity], f.sort_key())):
        if f.severity == "info" and not (options.show_info or f.slug in options.info_slugs
                                         or (options.show_missing and f.slug == "missing-setter")):
            continue
        key = (f.file, f.line, f.col, f.slug, f.message)
        if key in seen:
            continue
        seen.add(key)
        shown.append(f)
    return shown


def ordered_protocols(scan: ScanResult, order: Sequence[str] = ()) -> list[str]:
    rank = {name: i for i, name in enumerate(order)}
    return sorted(scan.protocols, key=lambda p: (rank.get(p, len(rank)), p))


def format_text(scan: ScanResult, options: TextOptions | None = None) -> str:
    options = options or TextOptions()
    paint = painter(options.color)
    shown = shown_findings(scan, options)
    lines: list[str] = []
    if options.statistics:
        lines.extend(statistics_lines(shown))
    else:
        for f in shown:
            lines.extend(finding_lines(f, paint))
    if lines:
        lines.append("")
    if not options.quiet and not options.statistics:
        body = chain_lines(scan, options, paint) if options.show_chains else attention_lines(scan, options, paint)
        lines.extend(body)
    lines.extend(summary_lines(scan, shown, options))
    return "\n".join(lines) + "\n"


def finding_lines(f: Finding, paint: Callable[[str, str], str]) -> list[str]:
    where = f"{printable(f.file)}:{f.line}:{f.col + 1}"
    lines = [f"{paint(where, 'bold')}: {paint(f.slug, f.severity)} [{f.severity}] {printable(f.message)}"]
    if len(f.entries) > 1:
        lines.append(f"    affects {len(f.entries)} entry classes: "
                     + _names((printable(_short(e, 1)) for e in f.entries), 6))
    if f.hint:
        lines.append(f"    hint: {printable(f.hint)}")
    return lines


def statistics_lines(shown: Sequence[Finding]) -> list[str]:
    """ruff's --statistics: one line per rule (and severity), most frequent first."""
    from tracer.checks import CATALOGUE

    counts = Counter((f.slug, f.severity) for f in shown)
    width = max((len(str(n)) for n in counts.values()), default=1)
    return [f"{n:>{width}}  {slug:<20} [{severity}] {CATALOGUE[slug].summary if slug in CATALOGUE else ''}".rstrip()
            for (slug, severity), n in sorted(counts.items(), key=lambda kv: (-kv[1], SEVERITY_RANK[kv[0][1]], kv[0]))]


def _names(names: Iterable[str], keep: int = NAMES_SHOWN) -> str:
    listed = list(names)
    more = len(listed) - keep
    return ", ".join(listed[:keep]) + (f" and {more} more" if more > 0 else "")


def attention_lines(scan: ScanResult, options: TextOptions, paint: Callable[[str, str], str]) -> list[str]:
    """Per protocol, the target models that are broken or unknown (with why). Draft heads
    need no attention (verdict ``draft``: the runner never calls the setter on them)."""
    lines: list[str] = []
    printed = {(f.file, f.line, f.message) for f in shown_findings(scan, options)} if not options.quiet else set()
    for proto in ordered_protocols(scan, options.protocol_order):
        models = [m for m in scan.models if m.protocol == proto and m.verdict in ATTENTION]
        if not models:
            continue
        targets = sorted(models, key=lambda m: (VERDICT_ORDER[m.verdict], m.entry))
        lines.append(paint(f"{proto}:", "bold"))
        for m in targets:
            lines.append(f"  {paint(m.verdict.ljust(7), m.verdict)} {printable(_short(m.entry, 1))}  "
                         f"({printable(m.file)}:{m.line})")
            said = next((f for f in m.findings if f.message == m.reason and (f.file, f.line, f.message) in printed),
                        None)
            if said is not None:  # the finding above says why: point at it rather than repeat it
                lines.append(f"          why: {said.slug} at {printable(said.file)}:{said.line} (above)")
            elif m.reason:
                lines.append(f"          why: {printable(m.reason)}")
        lines.append("")
    return lines


def chain_lines(scan: ScanResult, options: TextOptions, paint: Callable[[str, str], str]) -> list[str]:
    """Every model's verdict and chain, hop by hop (`scan --show-chains` / `-v`)."""
    lines: list[str] = []
    for proto in ordered_protocols(scan, options.protocol_order):
        models = sorted((m for m in scan.models if m.protocol == proto),
                        key=lambda m: (m.draft, VERDICT_ORDER.get(m.verdict, 9), m.entry))
        lines.append(paint(f"== {proto}", "bold"))
        missing = []
        for m in models:
            if m.verdict == "missing" and not options.show_missing:
                missing.append(printable(_short(m.entry, 1)))
                continue
            lines.extend(_model_lines(m, paint))
        if missing:
            lines.append(f"missing {len(missing)} entry classes without {proto}'s setter: "
                         + _names(missing, 12) + "  (--show-missing lists them)")
        lines.append("")
    if scan.call_sites:
        lines.append(paint("== runner call sites", "bold"))
        for s in scan.call_sites:
            order = {True: "before graph capture", False: "AFTER graph capture", None: "order unknown"}[
                s.before_graph_capture]
            ids = "with ids" if s.passes_ids else "WITHOUT ids"
            lines.append(f"  {s.protocol}: {printable(_short(s.caller))}  {printable(s.file)}:{s.line}  {ids}, {order}")
        lines.append("")
    return lines


def _model_lines(m: ModelResult, paint: Callable[[str, str], str]) -> list[str]:
    tag = f"  [draft head; its chain alone: {m.chain_verdict}]" if m.chain_verdict else "  [draft head]" if m.draft else ""
    lines = [f"{paint(m.verdict.ljust(7), m.verdict)} {printable(m.entry)}  ({printable(m.file)}:{m.line}){tag}"]
    if m.reason and m.verdict != "ok" and m.chain_verdict != "ok":
        lines.append(f"        why: {printable(m.reason)}")
    for hop in m.chain:
        how = hop.reason or hop.resolved_by
        lines.append(f"        {hop.kind:<10} {printable(_short(hop.qualname))}  {printable(hop.file)}:{hop.line}"
                     f"  [{printable(how)}]")
    return lines


def _counts(models: Iterable[ModelResult]) -> str:
    counts = Counter(m.chain_verdict or m.verdict for m in models)
    return ", ".join(f"{counts[v]} {v}" for v in ("ok", "broken", "unknown") if counts[v] or v == "ok")


def protocol_summary(scan: ScanResult, proto: str) -> str:
    """`55 target models (54 ok, 1 unknown); 16 draft heads not judged (their chains alone:
    6 ok, 10 broken); 219 without the setter`."""
    models = [m for m in scan.models if m.protocol == proto]
    targets = [m for m in models if not m.draft and m.verdict != "missing"]
    drafts = [m for m in models if m.draft and m.verdict != "missing"]
    missing = sum(1 for m in models if m.verdict == "missing")
    parts = [f"{plural(len(targets), 'target model')} ({_counts(targets)})" + graph_note(targets)]
    if drafts:
        parts.append(f"{plural(len(drafts), 'draft head')} not judged (chains alone: {_counts(drafts)})")
    if missing:
        parts.append(f"{missing} without the setter")
    return "; ".join(parts)


GRAPH_WORDS = {"fallback": "replayed CUDA graphs capture the fallback layers",
               "no-graphs": "the runner captures no CUDA graphs"}


def graph_note(models: Iterable[ModelResult]) -> str:
    """` — replayed CUDA graphs capture the fallback layers: cuda_graph_runner.py:339` where the
    runner walk says so for the judged models (the runner's answer is the same for all)."""
    judged = [m for m in models if m.graph_capture in GRAPH_WORDS]
    if not judged:
        return ""
    m = judged[0]
    where = m.graph_capture_site.rsplit("/", 1)[-1]
    return f" — {GRAPH_WORDS[m.graph_capture or '']}" + (f": {printable(where)}" if where else "")


def findings_count(findings: Sequence[Finding]) -> str:
    by_sev = Counter(f.severity for f in findings)
    words = {"error": ("error", "errors"), "warning": ("warning", "warnings"), "info": ("info", "info")}
    said = [plural(by_sev[s], *words[s]) for s in ("error", "warning", "info") if by_sev[s]]
    return ", ".join(said) if said else "no findings"


def scanned_name(scan: ScanResult) -> str:
    name = " ".join(p for p in (scan.framework.name, scan.framework.version) if p)
    if scan.framework.fork_of:
        name += f" (fork: package `{scan.framework.package_root}`)"
    return name or "the tree"


def summary_lines(scan: ScanResult, shown: Sequence[Finding], options: TextOptions) -> list[str]:
    stats = scan.stats
    how = "no file changed: the result came from the cache" if stats.result_cache else \
        f"{plural(stats.files_total, 'file')}, {stats.cache_hits} from the cache" + (
            f"; {stats.chains_traced} of {stats.chains_traced + stats.chains_reused} chains re-traced, the rest unchanged"
            if stats.chains_reused else "")
    lines = [f"Scanned {scanned_name(scan)} in {stats.seconds} s ({how})."]
    width = max((len(p) for p in scan.protocols), default=0)
    for proto in ordered_protocols(scan, options.protocol_order):
        lines.append(f"  {(proto + ':').ljust(width + 1)} {protocol_summary(scan, proto)}")
    for proto in scan.absent_protocols:
        lines.append(f"  {(proto + ':').ljust(width + 1)} not in this release (its setter is never mentioned)")
    for note in scan.notes:
        lines.append(f"  note: {printable(note)}")
    if any(m.verdict == "draft" for m in scan.models):
        lines.append("  Draft heads are not judged: the runner never calls the setter on a draft worker "
                     "(their findings are info).")
    hidden_info = sum(1 for f in scan.findings if f.severity == "info") - sum(1 for f in shown if f.severity == "info")
    tail = f" {plural(hidden_info, 'info finding')} not shown (--fail-on info, or --select RULE, shows them)." \
        if hidden_info else ""
    lines.append((f"Found {findings_count(shown)}." if shown else "No findings.") + tail)
    return lines


def summary_line(scan: ScanResult) -> str:
    """The summary in one line (sweep and the report quote it)."""
    parts = [f"{proto}: {protocol_summary(scan, proto)}" for proto in scan.protocols]
    parts += [f"{proto}: not in this release" for proto in scan.absent_protocols]
    return f"{scanned_name(scan)}: " + "; ".join(parts) + f". Findings: {findings_count(scan.findings)}."


def painter(color: bool) -> Callable[[str, str], str]:
    codes = {"error": "31", "broken": "31", "warning": "33", "unknown": "33", "info": "36", "missing": "36",
             "draft": "36", "ok": "32", "bold": "1"}

    def paint(text: str, kind: str) -> str:
        if not color or kind not in codes:
            return text
        return f"\x1b[{codes[kind]}m{text}\x1b[0m"
    return paint
