"""The fragments of the HTML report's pages, from the typed results; every value
is escaped in one place (``escape_html``)."""

from __future__ import annotations

import html
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tracer.index.source import read_regular_bytes
from tracer.model.findings import Finding
from tracer.model.results import CallSite, Hop, ModelResult, ScanResult
from tracer.present.graphs import finding_entries, hop_problem, location, page_name
from tracer.present.render import NO_GRAPHVIZ
from tracer.present.text import GRAPH_WORDS, findings_count, protocol_summary

VERDICTS = ("ok", "broken", "unknown", "missing", "draft")
# Matrix sort key: the worst first when sorted ascending.
VERDICT_RANK = {"broken": 0, "unknown": 1, "missing": 2, "ok": 3, "draft": 4}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
EXCERPT_CONTEXT = 3
MAX_SOURCE_BYTES = 4_000_000


def escape_html(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


class Excerpts:
    """Reads scanned files for excerpts, only from inside the source root (never
    through a link leaving it), regular files only, bounded."""

    def __init__(self, root: Path | None):
        self.root = Path(root).resolve() if root else None
        self.cache: dict[str, list[str] | None] = {}
        self.lock = threading.Lock()

    def lines(self, file: str | None) -> list[str] | None:
        if not self.root or not file:
            return None
        with self.lock:
            if file in self.cache:
                return self.cache[file]
        data = read_regular_bytes(self.root / file, MAX_SOURCE_BYTES, self.root)
        result = data.decode("utf-8", errors="replace").splitlines() if data is not None else None
        with self.lock:
            self.cache[file] = result
        return result

    def excerpt(self, file: str | None, line: int | None) -> str:
        lines = self.lines(file)
        if not lines or not line or line < 1 or line > len(lines):
            return ""
        first, last = max(1, line - EXCERPT_CONTEXT), min(len(lines), line + EXCERPT_CONTEXT)
        rows = []
        for number in range(first, last + 1):
            css = ' class="hit"' if number == line else ""
            rows.append(f"<span{css}><i>{number}</i>{escape_html(lines[number - 1])}</span>")
        return '<pre class="excerpt">' + "".join(rows) + "</pre>"


# --------------------------------------------------------------------------
# shared fragments


def _where(file: str | None, line: int | None) -> str:
    """file:line, allowed to break after each slash (long paths in narrow columns)."""
    return escape_html(location(file, line)).replace("/", "/<wbr>")


Where = Callable[[str | None, int | None], str]  # file:line as HTML (a link to the source line, when there is one)

# What the badges mean, said once on each page (the index and every model page).
LEGEND = (
    ("v-ok", "ok", "the ids reach a write that a forward which runs reads: the chosen layers are captured"),
    ("v-broken", "broken", "a hop of the chain breaks (a finding says where): the draft gets the wrong states"),
    ("v-unknown", "unknown", "tracing stopped at a hop it could not follow (why is on the model page)"),
    ("v-missing", "missing", "no setter: the model does not take part in the protocol (the support matrix)"),
    ("v-draft", "draft", "a draft head with the setter: not judged, the runner never calls the setter on it "
                         "(its page says what its chain alone would be)"),
    ("s-error", "error", "a finding that breaks capture"),
    ("s-warning", "warning", "a finding worth a look (a silent fallback, a hop not followed)"),
    ("s-info", "info", "informational: a draft head's copy of a check, or a model without the setter"),
)


def legend() -> str:
    items = "".join(f'<li><span class="badge {css}">{escape_html(word)}</span> {escape_html(text)}</li>' for css, word, text in LEGEND)
    return ('<details class="legend" open><summary>What the badges mean</summary><ul>' + items
            + '<li><span class="tag">draft head</span> an EAGLE/NextN/MTP head registered as an entry class: the runner '
              "never calls the setter on it, so its findings are informational</li>"
              '<li><span class="muted">·2</span> beside a verdict: its error and warning findings</li></ul></details>')


def _badge(verdict: str | None, text: str | None = None) -> str:
    verdict = verdict or "unknown"
    return f'<span class="badge v-{escape_html(verdict)}">{escape_html(text or verdict)}</span>'


def _severity(severity: str | None) -> str:
    severity = severity or "error"
    return f'<span class="badge s-{escape_html(severity)}">{escape_html(severity)}</span>'


def _yes_no(value: bool | None, yes: str = "yes", no: str = "no") -> str:
    if value is None:
        return '<span class="muted">?</span>'
    return f'<span class="yes">{yes}</span>' if value else f'<span class="no">{no}</span>'


def chain_name(entry: str, protocol: str) -> str:
    return page_name(entry)[: -len(".html")] + "." + page_name(protocol)[: -len(".html")]


def anchor(protocol: str) -> str:
    return "p-" + page_name(protocol)[: -len(".html")]


def _call_sites_table(sites: Sequence[CallSite], with_protocol: bool = True, where: Where = _where) -> str:
    if not sites:
        return '<p class="muted">No runner call site of this protocol was found.</p>'
    rows = []
    for site in sorted(sites, key=lambda s: (s.protocol, s.order or 0, s.file, s.line)):
        late = site.before_graph_capture is False
        rows.append(
            f'<tr class="{"bad" if late or site.passes_ids is False else ""}">'
            f'<td>{escape_html("" if site.order is None else site.order)}</td>'
            f'<td>{_qualname_cell(site.caller)}</td>'
            f'<td class="where">{where(site.file, site.line)}</td>'
            f'<td>{_yes_no(site.passes_ids)}</td>'
            f'<td>{_yes_no(site.before_graph_capture, "before", "after")}</td>'
            + (f'<td class="muted">{escape_html(site.protocol)}</td>' if with_protocol else "") + "</tr>"
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>order</th><th>caller</th><th>where</th>'
        "<th>passes ids</th><th>vs CUDA-graph capture</th>" + ("<th>protocol</th>" if with_protocol else "")
        + "</tr></thead><tbody>"
        + "".join(rows) + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# index


def index_main(scan: ScanResult, entries: Mapping[str, Mapping[str, ModelResult]], protocols: list[str],
               findings: Sequence[Finding], by_model: Mapping[tuple[str, str], list[Finding]], graphviz: bool,
               callgraph: Mapping[str, Any], where: Where = _where) -> str:
    framework = scan.framework
    title = f"{framework.name or 'framework'} {framework.version}".strip()
    parts = [
        f"<h1>Capture chains of {escape_html(title)} <small>{len(entries)} entry classes</small></h1>",
        f'<p class="sub">package <code>{escape_html(framework.package_root)}</code>'
        f' · protocols {" ".join(f"<span class=tag>{escape_html(p)}</span>" for p in protocols)}</p>',
    ]
    picture = "callgraph.svg" if callgraph.get("picture") else "callgraph.dot"
    parts.append(
        f'<p class="sub">jump to: <a href="#matrix-title">support matrix</a> · <a href="#call-sites">runner call sites</a>'
        f' · <a href="#findings">findings</a> · <a href="#callgraph">call graph</a> (<a href="{picture}">{picture}</a>)</p>'
    )
    if not graphviz:
        parts.append(f'<div class="notice">{escape_html(NO_GRAPHVIZ)}</div>')
    parts.append(legend())

    # counts by verdict, per protocol
    cards = []
    for protocol in protocols:
        counter: Counter[str] = Counter(
            models[protocol].verdict for models in entries.values() if protocol in models
        )
        buttons = "".join(
            f'<button type="button" class="count v-{v}" data-verdict="{v}" data-protocol="{escape_html(protocol)}" '
            f'title="show the {v} entry classes of {escape_html(protocol)}"><b>{counter.get(v, 0)}</b><span>{v}</span></button>'
            for v in VERDICTS
        )
        said = protocol_summary(scan, protocol)  # the line `tracer scan` prints for this protocol
        cards.append(f'<div class="card"><h3>{escape_html(protocol)} <span class="muted">entry classes by verdict</span></h3>'
                     f'<div class="counts">{buttons}</div><p class="muted small">{escape_html(said)}</p></div>')
    slug_counts = Counter((f.slug, f.severity) for f in findings)
    if slug_counts:
        chips = "".join(
            f'<button type="button" class="slug" data-slug="{escape_html(slug)}" title="show entry classes with {escape_html(slug)}">'
            f'{_severity(severity)}<span>{escape_html(slug)}</span> <b>{count}</b></button>'
            for (slug, severity), count in sorted(slug_counts.items(), key=lambda i: (SEVERITY_RANK.get(i[0][1], 9), -i[1], i[0][0]))
        )
    else:
        chips = '<span class="muted">no findings</span>'
    cards.append(f'<div class="card"><h3>findings <span class="muted">by slug, all protocols</span></h3>'
                 f'<div class="slugs">{chips}</div><p class="muted small">{escape_html(findings_count(findings))}: one per place '
                 'and message, as <code>tracer scan</code> counts them</p></div>')
    parts.append('<div class="cards">' + "".join(cards) + "</div>")

    # the matrix
    options = "".join(f'<option value="{escape_html(p)}">{escape_html(p)}</option>' for p in protocols)
    verdict_options = "".join(f'<option value="{v}">{v}</option>' for v in VERDICTS)
    parts.append(
        '<h2 id="matrix-title">Support matrix</h2>'
        '<div class="controls"><input type="search" id="filter-text" placeholder="filter entry classes…" aria-label="filter">'
        f'<select id="filter-protocol" aria-label="protocol"><option value="">any protocol</option>{options}</select>'
        f'<select id="filter-verdict" aria-label="verdict"><option value="">any verdict</option>{verdict_options}</select>'
        '<button type="button" id="filter-reset">reset</button><span class="shown" id="shown"></span></div>'
    )
    head = "".join(f'<th class="sortable v">{escape_html(p)}</th>' for p in protocols)
    rows = []
    for entry, models in sorted(entries.items(), key=lambda item: (_trouble(item[1]), item[0].rpartition(".")[2])):
        module, _, name = entry.rpartition(".")
        page = "models/" + page_name(entry)
        cells: list[str] = []
        verdicts: list[str] = []
        slugs: set[str] = set()
        count = 0
        for protocol in protocols:
            model = models.get(protocol)
            if model is None:
                cells.append('<td class="v" data-sort="9"><span class="muted">–</span></td>')
                continue
            verdict = model.verdict
            verdicts.append(f"{protocol}:{verdict}")
            own = by_model.get((entry, protocol), [])
            slugs.update(f.slug for f in own)
            slugs.update(model.slugs)
            own = [f for f in own if f.severity in ("error", "warning")]  # info is the verdict itself
            count += len(own)
            extra = f' <span class="n">·{len(own)}</span>' if own else ""
            tip = model.reason or verdict
            if model.graph_capture in GRAPH_WORDS:  # what replayed CUDA graphs capture (the runner's answer)
                tip += f"; {GRAPH_WORDS[model.graph_capture or '']}: {model.graph_capture_site}"
                extra += f' <span class="gc">graphs: {escape_html(model.graph_capture)}</span>'
            cells.append(
                f'<td class="v" data-sort="{VERDICT_RANK.get(verdict, 9)}"><a class="v-{escape_html(verdict)}" '
                f'href="{escape_html(page)}#{escape_html(anchor(protocol))}" title="{escape_html(tip)}">{escape_html(verdict)}{extra}</a></td>'
            )
        search = f"{entry} {' '.join(sorted(s for s in slugs if s))}".lower()
        draft = ' <span class="tag">draft head</span>' if any(m.draft for m in models.values()) else ""
        rows.append(
            f'<tr data-entry="{escape_html(entry)}" data-verdicts="{escape_html(" ".join(verdicts))}" '
            f'data-slugs="{escape_html(" ".join(sorted(s for s in slugs if s)))}" data-search="{escape_html(search)}">'
            f'<td class="entry" data-sort="{escape_html(name.lower())}"><a href="{escape_html(page)}" title="{escape_html(entry)}">{escape_html(name)}</a>'
            f'{draft}</td>'
            f'<td class="module">{escape_html(module).replace(".", ".<wbr>")}</td>{"".join(cells)}<td class="nf">{count or ""}</td></tr>'
        )
    parts.append(
        '<div class="tablebox"><table class="matrix" id="matrix"><thead><tr>'
        '<th class="sortable">entry class</th><th class="sortable">module</th>'
        f'{head}<th class="sortable" style="text-align:right">findings</th></tr></thead><tbody>'
        + "".join(rows) + "</tbody></table></div>"
    )

    # runner call sites, findings, call graph, input errors
    parts.append("<h2 id=\"call-sites\">Runner call sites</h2>" + _call_sites_table(scan.call_sites, where=where))
    parts.append(f"<h2 id=\"findings\">Findings <small class=muted>{escape_html(findings_count(findings))}, all protocols</small></h2>"
                 + _findings_table(findings, where))
    picture = (
        '<a href="callgraph.svg">callgraph.svg</a> · ' if callgraph.get("picture") else ""
    )
    parts.append(
        "<h2 id=\"callgraph\">Call graph</h2><p>"
        + str(callgraph.get("caption") or "The whole protocol subgraph (every traced chain and the runner call sites), "
              "clustered by module")
        + f': {picture}<a href="callgraph.dot">callgraph.dot</a>.'
        f' {escape_html(callgraph.get("message") or "")}</p>'
    )
    errors = scan.input_errors
    if errors:
        items = "".join(
            f'<tr><td class="where">{where(e.path, e.line)}</td><td>{escape_html(e.reason)}</td></tr>'
            for e in errors
        )
        parts.append(
            f"<details><summary>{len(errors)} input error(s): files the scan could not read</summary>"
            f'<div class="tablebox"><table><tbody>{items}</tbody></table></div></details>'
        )
    return "\n".join(parts)


def _trouble(models: Mapping[str, ModelResult]) -> int:
    """Problems first: a target model broken, unknown; a draft head whose chain alone is broken or
    unknown; ok; only missing."""
    ranks = [{"broken": 0, "unknown": 1}.get(m.chain_verdict or m.verdict, 3 if m.verdict == "ok" else 4)
             for m in models.values()]
    ranks = [r + 2 if r < 2 and m.draft else r for r, m in zip(ranks, models.values())]
    return min(ranks, default=4)


def _findings_table(findings: Sequence[Finding], where: Where = _where) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    loud = [f for f in findings if f.severity != "info"]
    quiet = [f for f in findings if f.severity == "info"]
    text = _findings_rows(loud, where) if loud else '<p class="muted">No error or warning.</p>'
    if quiet:
        slugs = ", ".join(sorted({f.slug for f in quiet}))
        text += f"<details><summary>{len(quiet)} info finding(s) ({escape_html(slugs)})</summary>{_findings_rows(quiet, where)}</details>"
    return text


def _findings_rows(findings: Sequence[Finding], where: Where = _where) -> str:
    rows = []
    for f in sorted(findings, key=lambda f: (SEVERITY_RANK.get(f.severity, 9), f.slug, f.entry or "")):
        entries = finding_entries(f)
        links = [
            f'<a href="models/{escape_html(page_name(entry))}#{escape_html(anchor(f.protocol.split(", ")[0]))}">{escape_html(entry.rsplit(".", 1)[-1])}</a>'
            for entry in entries
        ]
        if not links:
            who = '<span class="muted">runner</span>'
        elif len(links) <= 3:
            who = "<br>".join(links)
        else:  # one finding in shared code reaches many entry classes
            who = "<br>".join(links[:2]) + f'<details class="more"><summary>{len(links) - 2} more</summary>{"<br>".join(links[2:])}</details>'

        rows.append(
            f'<tr><td>{_severity(f.severity)}</td><td><code>{escape_html(f.slug)}</code></td><td>{escape_html(f.protocol)}</td><td>{who}</td>'
            f'<td class="where">{where(f.file, f.line)}</td><td class="msg">{escape_html(f.message)}</td></tr>'
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>severity</th><th>slug</th><th>protocol</th><th>entry class</th>'
        "<th>where</th><th>message</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# model pages


def model_main(entry: str, models: Mapping[str, ModelResult], protocols: list[str],
               findings_of: Callable[[str, str], list[Finding]], sites_of: Callable[[str], list[CallSite]],
               pictures: Mapping[tuple[str, str], str], sources: Excerpts, graphviz: bool,
               where: Where = _where) -> str:
    module, _, name = entry.rpartition(".")
    # what needs a look first: broken, then unknown sections, then the others in the given order
    protocols = sorted(protocols, key=lambda p: {"broken": 0, "unknown": 1}.get(models[p].verdict, 2) if p in models else 3)
    first = next(iter(models.values()))
    draft = ' <span class="tag">draft head</span>' if first.draft else ""
    parts = [
        f"<h1>{escape_html(name)} <small>{escape_html(module)}</small>{draft}</h1>",
        f'<p class="sub"><code>{escape_html(entry)}</code> · <span class="mono">{where(first.file, first.line)}</span></p>',
        '<div class="toc">' + "".join(
            f'<a href="#{escape_html(anchor(p))}">{_badge(models[p].verdict, p + ": " + models[p].verdict)}</a>'
            for p in protocols if p in models
        ) + "</div>",
    ]
    for protocol in protocols:
        model = models.get(protocol)
        if model is None:
            continue
        verdict = model.verdict
        chain = model.chain
        own = findings_of(entry, protocol)
        bad = hop_problem(model, own)
        prefix = anchor(protocol)
        section = [f'<section class="protocol v-{escape_html(verdict)}-box" id="{escape_html(prefix)}">',
                   f"<h2>{escape_html(protocol)} {_badge(verdict)}</h2>"]
        if model.chain_verdict:
            section.append(f'<p class="sub">draft head, not judged: the runner never calls the setter on a draft '
                           f'worker. Its chain alone: {_badge(model.chain_verdict)}</p>')
        if model.reason:
            section.append(f'<p class="reason">{escape_html(model.reason)}</p>')
        if chain:
            svg = pictures.get((entry, protocol))
            chain_file = "../chains/" + chain_name(entry, protocol)
            if svg:
                section.append(f'<div class="picture" role="img" aria-label="chain of {escape_html(name)} for {escape_html(protocol)}">{svg}</div>')
            else:
                why = NO_GRAPHVIZ if not graphviz else "Graphviz could not draw this chain."
                section.append(f'<div class="notice">{escape_html(why)}</div>')
            section.append(f'<p class="muted">picture: <a href="{escape_html(chain_file)}.svg">svg</a> · <a href="{escape_html(chain_file)}.dot">dot</a></p>' if svg
                           else f'<p class="muted">picture source: <a href="{escape_html(chain_file)}.dot">dot</a></p>')
            section.append(_chain_table(chain, bad, prefix, where))
        if model.state_owner:
            section.append(
                f'<p class="sub">state: <code>{escape_html(model.state_owner or "?")}</code>'
                f'.<code>{escape_html(model.state_attribute or "?")}</code></p>'
            )
        section.append(f"<h3>Findings ({len(own)})</h3>")
        if own:
            for f in sorted(own, key=lambda f: (SEVERITY_RANK.get(f.severity, 9), f.line)):
                severity = f.severity
                hint = f'<div class="hint"><b>fix:</b> {escape_html(f.hint)}</div>' if f.hint else ""
                section.append(
                    f'<div class="finding s-{escape_html(severity)}-box"><header>{_severity(severity)} <code>{escape_html(f.slug)}</code>'
                    f' <span class="mono muted">{where(f.file, f.line)}</span></header>'
                    f'<div class="msg">{escape_html(f.message)}</div>{hint}{sources.excerpt(f.file, f.line)}</div>'
                )
        else:
            section.append('<p class="muted">None.</p>')
        section.append("<h3>Runner call sites</h3>"
                       + _call_sites_table(sites_of(protocol), with_protocol=False, where=where))
        section.append("</section>")
        parts.append("\n".join(section))
    parts.append(legend().replace(" open>", ">", 1))
    return "\n".join(parts)


def _qualname_cell(qualname: str | None) -> str:
    """``Class.member`` to read, the module under it in grey (the full name wraps badly)."""
    if not qualname:
        return '<span class="muted">?</span>'
    parts = qualname.split(".")
    head, module = ".".join(parts[-2:]), ".".join(parts[:-2])
    if parts[0] == "self":  # an attribute path the engine could not type
        head, module = qualname, ""
    return f'<code class="q" title="{escape_html(qualname)}">{escape_html(head)}</code><br><span class="mono muted small">{escape_html(module)}</span>'


def _chain_table(chain: Sequence[Hop], bad: int | None, prefix: str, where: Where = _where) -> str:
    rows = []
    for index, hop in enumerate(chain):
        call = ""
        if hop.call_file or hop.call_line:
            call = f'<br><span class="muted wraps">called at {where(hop.call_file, hop.call_line)}</span>'
        ids = _yes_no(hop.passes_ids) if hop.call_line else ""
        how = hop.resolved_by
        if hop.reason:
            how = (how + " — " if how else "") + hop.reason
        rows.append(
            f'<tr id="{escape_html(prefix)}-{index}" class="{"bad" if index == bad else ""}"><td>{index + 1}</td>'
            f'<td><span class="tag">{escape_html(hop.kind)}</span></td>'
            f"<td>{_qualname_cell(hop.qualname)}</td>"
            f'<td class="where">{where(hop.file, hop.line)}{call}</td>'
            f"<td class=\"resolved\">{escape_html(how)}</td><td>{ids}</td></tr>"
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>#</th><th>hop</th><th>qualname</th><th>where</th>'
        "<th>resolved by</th><th>passes ids</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


