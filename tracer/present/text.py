"""Text output of a scan, in a linter's shape (ruff's): the findings first, most
severe first, each once (`path:line:col: slug [severity] message`); then the
verdicts that need attention (broken, unknown) per protocol; then a summary that
names what was scanned and counts target models and draft heads apart.

Warnings that share rule, severity, hint and message shape (the message with its
names, code and numbers taken out: 24 setters that each fall back silently)
print as one entry (an error always has its own line): the first in full, then the count and the first
places (``expand``: `-v`, `--select`, lists each). Each finding line names its
protocol. `ok` chains are printed hop by hop only when asked (``show_chains``:
`scan --show-chains` / `-v`); ``quiet`` prints the findings alone (ruff's `-q`).
"""

from __future__ import annotations

import dataclasses
import os
import re
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
COLLAPSE_AT = 3  # findings of one shape printed as one entry from this many on
PLACES_SHOWN = 4  # places listed on a collapsed entry's line


@dataclass(frozen=True)
class TextOptions:
    show_chains: bool = False  # every model's chain hop by hop, ok ones too
    show_missing: bool = False  # models without the setter one by one
    show_info: bool = False  # every info finding (--fail-on info)
    info_slugs: frozenset[str] = field(default=frozenset())  # info findings of these rules (selected by name)
    quiet: bool = False  # the findings alone
    color: bool = False
    protocol_order: Sequence[str] = ()  # protocols named here come first, in this order
    statistics: bool = False  # counts per rule instead of the findings (ruff's --statistics)
    expand: bool = False  # every finding on its own line, none collapsed (-v, --select)


def plural(count: int, word: str, many: str = "") -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _short(qualname: str, keep: int = 2) -> str:
    return ".".join(qualname.split(".")[-keep:])


def shown_findings(scan: ScanResult, options: TextOptions) -> list[Finding]:
    """The findings the output prints: errors, then warnings, then (when asked) info; each once.
    One place and message found by several protocols is one finding naming them all
    (``protocol`` "sglang-eagle3, sglang-dflash") and the entry classes of each."""
    rank = {name: i for i, name in enumerate(options.protocol_order)}
    merged: dict[tuple[str, int, int, str, str], list[Finding]] = {}
    for f in sorted(scan.findings, key=lambda f: (SEVERITY_RANK[f.severity], f.sort_key())):
        if f.severity == "info" and not (options.show_info or f.slug in options.info_slugs
                                         or (options.show_missing and f.slug == "missing-setter")):
            continue
        merged.setdefault((f.file, f.line, f.col, f.slug, f.message), []).append(f)
    shown = []
    for same in merged.values():
        first = same[0]
        protocols = sorted({f.protocol for f in same if f.protocol}, key=lambda p: (rank.get(p, len(rank)), p))
        if len(protocols) > 1:
            entries = tuple(dict.fromkeys(e for f in same for e in (f.entries or ((f.entry,) if f.entry else ()))))
            first = dataclasses.replace(first, protocol=", ".join(protocols), entries=entries)
        shown.append(first)
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
        for group in (((f,) for f in shown) if options.expand else collapsed(shown)):
            lines.extend(group_lines(group, paint))
    if options.quiet:
        return "\n".join(lines) + "\n" if lines else ""
    if lines:
        lines.append("")
    if not options.statistics:
        body = chain_lines(scan, options, paint) if options.show_chains else attention_lines(scan, options, paint)
        lines.extend(body)
    lines.extend(summary_lines(scan, shown, options))
    return "\n".join(lines) + "\n"


_NAMES = re.compile(r"`[^`]*`|\b\w+(?:\.\w+)+\b|\b[A-Z]\w*[a-z]\w*[A-Z]\w*\b|\d+")


def shape(f: Finding) -> tuple[str, str, str, str]:
    """What findings of one kind share: rule, severity, hint and the message with its names
    (dotted, CamelCase), code spans and numbers taken out."""
    return (f.slug, f.severity, f.hint, _NAMES.sub("_", f.message))


def collapsed(shown: Sequence[Finding]) -> list[tuple[Finding, ...]]:
    """The findings in order, warnings (and info) of one shape (COLLAPSE_AT or more) as one
    group, where the first of them stood; errors are never collapsed."""
    by_shape: dict[tuple[str, str, str, str], list[Finding]] = {}
    for f in shown:
        by_shape.setdefault(shape(f), []).append(f)
    groups: list[tuple[Finding, ...]] = []
    for f in shown:
        same = by_shape[shape(f)]
        if len(same) < COLLAPSE_AT or f.severity == "error":  # each error stays on its own line
            groups.append((f,))
        elif same[0] is f:
            groups.append(tuple(same))
    return groups


def group_lines(group: Sequence[Finding], paint: Callable[[str, str], str]) -> list[str]:
    first = group[0]
    if len(group) == 1:
        return finding_lines(first, paint)
    lines = finding_lines(first, paint)[:1]
    rest = group[1:]
    folder = os.path.commonpath([f.file for f in group]) if len({f.file for f in group}) > 1 else ""
    folder = folder if folder and not any(f.file == folder for f in group) else ""
    places = [f"{printable(f.file[len(folder) + 1:] if folder else f.file)}:{f.line}" for f in rest]
    more = len(places) - PLACES_SHOWN
    listed = ", ".join(places[:PLACES_SHOWN]) + (f" and {more} more" if more > 0 else "")
    entries = {e for f in group for e in (f.entries or ((f.entry,) if f.entry else ()))}
    where = f" in {printable(folder)}/" if folder else ""
    protocols = list(dict.fromkeys(p for f in group for p in f.protocol.split(", ") if p))
    about = [", ".join(protocols)] if protocols != first.protocol.split(", ") else []
    about += [f"{len(entries)} entry classes in all"] if len(entries) > len(group) else []
    affects = f" ({'; '.join(about)})" if about else ""
    lines.append(f"    and {len(rest)} more like it{where}{affects}: {listed}  (-v or --select {first.slug} lists each)")
    if first.hint:
        lines.append(f"    hint: {printable(first.hint)}")
    return lines


def finding_line(f: Finding, paint: Callable[[str, str], str] = lambda text, kind: text) -> str:
    """`path:line:col: slug [severity] protocol: message`, the line editors and CI parse."""
    where = f"{printable(f.file)}:{f.line}:{f.col + 1}"
    proto = f"{printable(f.protocol)}: " if f.protocol else ""
    return f"{paint(where, 'bold')}: {paint(f.slug, f.severity)} [{f.severity}] {proto}{printable(f.message)}"


def finding_lines(f: Finding, paint: Callable[[str, str], str]) -> list[str]:
    lines = [finding_line(f, paint)]
    if len(f.entries) > 1:
        lines.append(f"    affects {len(f.entries)} entry classes: "
                     + _names((printable(_short(e, 1)) for e in f.entries), 6))
    if f.hint:
        lines.append(f"    hint: {printable(f.hint)}")
    return lines


def statistics(shown: Sequence[Finding]) -> list[tuple[int, str, str, str]]:
    """(count, slug, severity, summary) per rule and severity, most frequent first."""
    from tracer.checks import CATALOGUE

    counts = Counter((f.slug, f.severity) for f in shown)
    return [(n, slug, severity, CATALOGUE[slug].summary if slug in CATALOGUE else "")
            for (slug, severity), n in sorted(counts.items(), key=lambda kv: (-kv[1], SEVERITY_RANK[kv[0][1]], kv[0]))]


def statistics_lines(shown: Sequence[Finding]) -> list[str]:
    """ruff's --statistics: one line per rule (and severity), most frequent first, in columns."""
    rows = statistics(shown)
    count_w = max((len(str(n)) for n, *_ in rows), default=1)
    slug_w = max((len(slug) for _, slug, _, _ in rows), default=0)
    sev_w = max((len(severity) + 2 for _, _, severity, _ in rows), default=0)
    return [f"{n:>{count_w}}  {slug:<{slug_w}}  {'[' + severity + ']':<{sev_w}}  {summary}".rstrip()
            for n, slug, severity, summary in rows]


def statistics_json(shown: Sequence[Finding]) -> list[dict[str, object]]:
    """--statistics --format json (ruff's shape: one object per rule)."""
    return [{"slug": slug, "severity": severity, "count": n, "summary": summary}
            for n, slug, severity, summary in statistics(shown)]


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
    every = shown_findings(scan, dataclasses.replace(options, show_info=True))
    hidden_info = sum(1 for f in every if f.severity == "info") - sum(1 for f in shown if f.severity == "info")
    tail = f" {plural(hidden_info, 'info finding')} not shown (--fail-on info, or --select RULE, shows them)." \
        if hidden_info else ""
    lines.append((f"Found {findings_count(shown)}." if shown else "No findings.") + tail)
    return lines


def summary_line(scan: ScanResult) -> str:
    """The summary in one line (sweep and the report quote it)."""
    parts = [f"{proto}: {protocol_summary(scan, proto)}" for proto in scan.protocols]
    parts += [f"{proto}: not in this release" for proto in scan.absent_protocols]
    counted = shown_findings(scan, TextOptions(show_info=True))  # as scan counts them: one per place and message
    return f"{scanned_name(scan)}: " + "; ".join(parts) + f". Findings: {findings_count(counted)}."


def painter(color: bool) -> Callable[[str, str], str]:
    codes = {"error": "31", "broken": "31", "warning": "33", "unknown": "33", "info": "36", "missing": "36",
             "draft": "36", "ok": "32", "bold": "1"}

    def paint(text: str, kind: str) -> str:
        if not color or kind not in codes:
            return text
        return f"\x1b[{codes[kind]}m{text}\x1b[0m"
    return paint
