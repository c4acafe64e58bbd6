"""`tracer report`: an HTML report and Graphviz pictures built from the scan JSON.

The report reads nothing but the scan JSON (and, for source excerpts, the
scanned files), so a saved scan can be turned into a report later or on
another machine: ``tracer report --from scan.json -o DIR``.

Layout of DIR::

    index.html              support matrix (entry class × protocol), counts, findings
    models/<entry>.html     one page per entry class: chain pictures, findings, call sites
    chains/<entry>.<protocol>.dot|svg   each chain picture
    callgraph.dot|svg       the whole protocol subgraph, clustered by module
    report.css, report.js

Templates are plain ``string.Template`` files under ``reports/`` (package
``tracer._reports``): the pages are a handful of tables built in Python with
every value escaped in one place (``_e``), which a template language would
not make shorter, and it keeps Jinja2 out of the dependencies.
"""

from __future__ import annotations

import html
import json
import string
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import click

from tracer import __version__
from tracer import render as rendering

VERDICTS = ("ok", "broken", "unknown", "missing")
# Matrix sort key: the worst first when sorted ascending.
VERDICT_RANK = {"broken": 0, "unknown": 1, "missing": 2, "ok": 3}
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
EXCERPT_CONTEXT = 3
MAX_SOURCE_BYTES = 4_000_000


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# --------------------------------------------------------------------------
# assets


def _assets_dir():
    """The templates: ``tracer._reports`` when installed, ``reports/`` in a checkout."""
    try:
        from importlib.resources import files

        folder = files("tracer._reports")
        if folder.joinpath("page.html").is_file():
            return folder
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "reports"


def _asset_text(name: str) -> str:
    return _assets_dir().joinpath(name).read_text(encoding="utf-8")


class _Pages:
    """Fills page.html; the template is read once per report."""

    def __init__(self, scan: dict):
        self.template = string.Template(_asset_text("page.html"))
        self.tool_version = (scan.get("tool") or {}).get("version") or __version__

    def page(self, title: str, main: str, crumbs: str, assets: str, body_class: str) -> str:
        return self.template.substitute(
            title=_e(title), main=main, crumbs=crumbs, assets=assets,
            body_class=body_class, tool_version=_e(self.tool_version),
        )


# --------------------------------------------------------------------------
# source excerpts


class _Sources:
    """Reads scanned files for excerpts, only from inside the source root."""

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
        result = None
        try:
            path = (self.root / file).resolve()
            if path.is_relative_to(self.root) and path.is_file() and path.stat().st_size <= MAX_SOURCE_BYTES:
                result = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            result = None
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
            rows.append(f"<span{css}><i>{number}</i>{_e(lines[number - 1])}</span>")
        return '<pre class="excerpt">' + "".join(rows) + "</pre>"


# --------------------------------------------------------------------------
# shared fragments


def _where(file: str | None, line: int | None) -> str:
    """file:line, allowed to break after each slash (long paths in narrow columns)."""
    return _e(rendering.location(file, line)).replace("/", "/<wbr>")


def _badge(verdict: str | None, text: str | None = None) -> str:
    verdict = verdict or "unknown"
    return f'<span class="badge v-{_e(verdict)}">{_e(text or verdict)}</span>'


def _severity(severity: str | None) -> str:
    severity = severity or "error"
    return f'<span class="badge s-{_e(severity)}">{_e(severity)}</span>'


def _yes_no(value, yes: str = "yes", no: str = "no") -> str:
    if value is None:
        return '<span class="muted">?</span>'
    return f'<span class="yes">{yes}</span>' if value else f'<span class="no">{no}</span>'


def _chain_name(entry: str, protocol: str) -> str:
    return rendering.page_name(entry)[: -len(".html")] + "." + rendering.page_name(protocol)[: -len(".html")]


def _anchor(protocol: str) -> str:
    return "p-" + rendering.page_name(protocol)[: -len(".html")]


def _call_sites_table(sites: list[dict], with_protocol: bool = True) -> str:
    if not sites:
        return '<p class="muted">No runner call site of this protocol was found.</p>'
    rows = []
    for site in sorted(sites, key=lambda s: (s.get("protocol") or "", s.get("order") or 0, s.get("file") or "", s.get("line") or 0)):
        late = site.get("before_graph_capture") is False
        rows.append(
            f'<tr class="{"bad" if late or site.get("passes_ids") is False else ""}">'
            f'<td>{_e(site.get("order", ""))}</td>'
            f'<td>{_qualname_cell(site.get("caller"))}</td>'
            f'<td class="where">{_where(site.get("file"), site.get("line"))}</td>'
            f'<td>{_yes_no(site.get("passes_ids"))}</td>'
            f'<td>{_yes_no(site.get("before_graph_capture"), "before", "after")}</td>'
            + (f'<td class="muted">{_e(site.get("protocol"))}</td>' if with_protocol else "") + "</tr>"
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>order</th><th>caller</th><th>where</th>'
        "<th>passes ids</th><th>vs CUDA-graph capture</th>" + ("<th>protocol</th>" if with_protocol else "")
        + "</tr></thead><tbody>"
        + "".join(rows) + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# index


def _index_main(scan: dict, entries: dict, protocols: list[str], findings: list[dict], by_model: dict, graphviz: bool, callgraph: dict) -> str:
    framework = scan.get("framework") or {}
    title = f"{framework.get('name') or 'framework'} {framework.get('version') or ''}".strip()
    stats = scan.get("stats") or {}
    parts = [
        f"<h1>Capture chains of {_e(title)} <small>{len(entries)} entry classes</small></h1>",
        f'<p class="sub">root <code>{_e(scan.get("root"))}</code> · package <code>{_e(framework.get("package_root"))}</code>'
        f' · protocols {" ".join(f"<span class=tag>{_e(p)}</span>" for p in protocols)}</p>',
    ]
    if stats:
        shown = ", ".join(f"{_e(k.replace('_', ' '))} {_e(v)}" for k, v in stats.items())
        parts.append(f'<p class="sub">scan: {shown}</p>')
    picture = "callgraph.svg" if callgraph.get("picture") else "callgraph.dot"
    parts.append(
        f'<p class="sub">jump to: <a href="#matrix-title">support matrix</a> · <a href="#call-sites">runner call sites</a>'
        f' · <a href="#findings">findings</a> · whole call graph: <a href="{picture}">{picture}</a></p>'
    )
    if not graphviz:
        parts.append(f'<div class="notice">{_e(rendering.NO_GRAPHVIZ)}</div>')

    # counts by verdict, per protocol
    cards = []
    for protocol in protocols:
        counter = Counter(
            models[protocol].get("verdict") or "unknown" for models in entries.values() if protocol in models
        )
        buttons = "".join(
            f'<button type="button" class="count v-{v}" data-verdict="{v}" data-protocol="{_e(protocol)}" '
            f'title="show the {v} entry classes of {_e(protocol)}"><b>{counter.get(v, 0)}</b><span>{v}</span></button>'
            for v in VERDICTS
        )
        cards.append(f'<div class="card"><h3>{_e(protocol)}</h3><div class="counts">{buttons}</div></div>')
    slug_counts = Counter((f.get("slug") or "?", f.get("severity") or "error") for f in findings)
    if slug_counts:
        chips = "".join(
            f'<button type="button" class="slug" data-slug="{_e(slug)}" title="show entry classes with {_e(slug)}">'
            f'{_severity(severity)}<span>{_e(slug)}</span> <b>{count}</b></button>'
            for (slug, severity), count in sorted(slug_counts.items(), key=lambda i: (SEVERITY_RANK.get(i[0][1], 9), -i[1], i[0][0]))
        )
    else:
        chips = '<span class="muted">no findings</span>'
    cards.append(f'<div class="card"><h3>findings <span class="muted">by slug</span></h3><div class="slugs">{chips}</div></div>')
    parts.append('<div class="cards">' + "".join(cards) + "</div>")

    # the matrix
    options = "".join(f'<option value="{_e(p)}">{_e(p)}</option>' for p in protocols)
    verdict_options = "".join(f'<option value="{v}">{v}</option>' for v in VERDICTS)
    parts.append(
        '<h2 id="matrix-title">Support matrix</h2>'
        '<div class="controls"><input type="search" id="filter-text" placeholder="filter entry classes…" aria-label="filter">'
        f'<select id="filter-protocol" aria-label="protocol"><option value="">any protocol</option>{options}</select>'
        f'<select id="filter-verdict" aria-label="verdict"><option value="">any verdict</option>{verdict_options}</select>'
        '<button type="button" id="filter-reset">reset</button><span class="shown" id="shown"></span></div>'
    )
    head = "".join(f'<th class="sortable v">{_e(p)}</th>' for p in protocols)
    rows = []
    for entry, models in entries.items():
        module, _, name = entry.rpartition(".")
        page = "models/" + rendering.page_name(entry)
        cells, verdicts, slugs = [], [], set()
        count = 0
        for protocol in protocols:
            model = models.get(protocol)
            if model is None:
                cells.append('<td class="v" data-sort="9"><span class="muted">–</span></td>')
                continue
            verdict = model.get("verdict") or "unknown"
            verdicts.append(f"{protocol}:{verdict}")
            own = by_model.get((entry, protocol), [])
            slugs.update(f.get("slug") for f in own)
            slugs.update(model.get("findings") or [])
            own = [f for f in own if f.get("severity") in ("error", "warning")]  # info is the verdict itself
            count += len(own)
            extra = f' <span class="n">·{len(own)}</span>' if own else ""
            tip = model.get("reason") or verdict
            cells.append(
                f'<td class="v" data-sort="{VERDICT_RANK.get(verdict, 9)}"><a class="v-{_e(verdict)}" '
                f'href="{_e(page)}#{_e(_anchor(protocol))}" title="{_e(tip)}">{_e(verdict)}{extra}</a></td>'
            )
        search = f"{entry} {' '.join(sorted(s for s in slugs if s))}".lower()
        rows.append(
            f'<tr data-entry="{_e(entry)}" data-verdicts="{_e(" ".join(verdicts))}" '
            f'data-slugs="{_e(" ".join(sorted(s for s in slugs if s)))}" data-search="{_e(search)}">'
            f'<td class="entry" data-sort="{_e(name.lower())}"><a href="{_e(page)}" title="{_e(entry)}">{_e(name)}</a></td>'
            f'<td class="module">{_e(module)}</td>{"".join(cells)}<td class="nf">{count or ""}</td></tr>'
        )
    parts.append(
        '<div class="tablebox"><table class="matrix" id="matrix"><thead><tr>'
        '<th class="sortable">entry class</th><th class="sortable">module</th>'
        f'{head}<th class="sortable" style="text-align:right">findings</th></tr></thead><tbody>'
        + "".join(rows) + "</tbody></table></div>"
    )

    # runner call sites, findings, call graph, input errors
    parts.append("<h2 id=\"call-sites\">Runner call sites</h2>" + _call_sites_table(scan.get("call_sites") or []))
    parts.append(f"<h2 id=\"findings\">Findings <small class=muted>{len(findings)}</small></h2>" + _findings_table(findings))
    picture = (
        '<a href="callgraph.svg">callgraph.svg</a> · ' if callgraph.get("picture") else ""
    )
    parts.append(
        "<h2 id=\"callgraph\">Call graph</h2><p>The whole protocol subgraph (every traced chain and the runner call sites), "
        f'clustered by module: {picture}<a href="callgraph.dot">callgraph.dot</a>.'
        f' {_e(callgraph.get("message") or "")}</p>'
    )
    errors = scan.get("input_errors") or []
    if errors:
        items = "".join(
            f'<tr><td class="where">{_where(e.get("file"), e.get("line"))}</td><td>{_e(e.get("reason"))}</td></tr>'
            for e in errors
        )
        parts.append(
            f"<details><summary>{len(errors)} input error(s): files the scan could not read</summary>"
            f'<div class="tablebox"><table><tbody>{items}</tbody></table></div></details>'
        )
    return "\n".join(parts)


def _findings_table(findings: list[dict]) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    loud = [f for f in findings if f.get("severity") != "info"]
    quiet = [f for f in findings if f.get("severity") == "info"]
    text = _findings_rows(loud) if loud else '<p class="muted">No error or warning.</p>'
    if quiet:
        slugs = ", ".join(sorted({f.get("slug") or "?" for f in quiet}))
        text += f"<details><summary>{len(quiet)} info finding(s) ({_e(slugs)})</summary>{_findings_rows(quiet)}</details>"
    return text


def _findings_rows(findings: list[dict]) -> str:
    rows = []
    for f in sorted(findings, key=lambda f: (SEVERITY_RANK.get(f.get("severity"), 9), f.get("slug") or "", f.get("entry") or "")):
        entries = rendering.finding_entries(f)
        links = [
            f'<a href="models/{_e(rendering.page_name(entry))}#{_e(_anchor(f.get("protocol") or ""))}">{_e(entry.rsplit(".", 1)[-1])}</a>'
            for entry in entries
        ]
        if not links:
            who = '<span class="muted">runner</span>'
        elif len(links) <= 3:
            who = "<br>".join(links)
        else:  # one finding in shared code reaches many entry classes
            who = "<br>".join(links[:2]) + f'<details class="more"><summary>{len(links) - 2} more</summary>{"<br>".join(links[2:])}</details>'

        rows.append(
            f'<tr><td>{_severity(f.get("severity"))}</td><td><code>{_e(f.get("slug"))}</code></td><td>{who}</td>'
            f'<td class="where">{_where(f.get("file"), f.get("line"))}</td><td>{_e(f.get("message"))}</td></tr>'
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>severity</th><th>slug</th><th>entry class</th>'
        "<th>where</th><th>message</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# model pages


def _model_main(entry: str, models: dict, protocols: list[str], findings_of, sites_of, pictures: dict, sources: _Sources, graphviz: bool) -> str:
    module, _, name = entry.rpartition(".")
    first = next(iter(models.values()))
    parts = [
        f"<h1>{_e(name)} <small>{_e(module)}</small></h1>",
        f'<p class="sub"><code>{_e(entry)}</code> · <span class="mono">{_e(rendering.location(first.get("file"), first.get("line")))}</span></p>',
        '<div class="toc">' + "".join(
            f'<a href="#{_e(_anchor(p))}">{_badge(models[p].get("verdict"), p + ": " + (models[p].get("verdict") or "unknown"))}</a>'
            for p in protocols if p in models
        ) + "</div>",
    ]
    for protocol in protocols:
        model = models.get(protocol)
        if model is None:
            continue
        verdict = model.get("verdict") or "unknown"
        chain = model.get("chain") or []
        own = findings_of(entry, protocol)
        bad = rendering.hop_problem(model, own)
        prefix = _anchor(protocol)
        section = [f'<section class="protocol v-{_e(verdict)}-box" id="{_e(prefix)}">',
                   f"<h2>{_e(protocol)} {_badge(verdict)}</h2>"]
        if model.get("reason"):
            section.append(f'<p class="reason">{_e(model["reason"])}</p>')
        if chain:
            svg = pictures.get((entry, protocol))
            chain_file = "../chains/" + _chain_name(entry, protocol)
            if svg:
                section.append(f'<div class="picture" role="img" aria-label="chain of {_e(name)} for {_e(protocol)}">{svg}</div>')
            else:
                why = rendering.NO_GRAPHVIZ if not graphviz else "Graphviz could not draw this chain."
                section.append(f'<div class="notice">{_e(why)}</div>')
            section.append(f'<p class="muted">picture: <a href="{_e(chain_file)}.svg">svg</a> · <a href="{_e(chain_file)}.dot">dot</a></p>' if svg
                           else f'<p class="muted">picture source: <a href="{_e(chain_file)}.dot">dot</a></p>')
            section.append(_chain_table(chain, bad, prefix))
        if model.get("state_owner"):
            section.append(
                f'<p class="sub">state: <code>{_e(model.get("state_owner") or "?")}</code>'
                f'.<code>{_e(model.get("state_attribute") or "?")}</code></p>'
            )
        section.append(f"<h3>Findings ({len(own)})</h3>")
        if own:
            for f in sorted(own, key=lambda f: (SEVERITY_RANK.get(f.get("severity"), 9), f.get("line") or 0)):
                severity = f.get("severity") or "error"
                hint = f'<div class="hint"><b>fix:</b> {_e(f.get("hint"))}</div>' if f.get("hint") else ""
                section.append(
                    f'<div class="finding s-{_e(severity)}-box"><header>{_severity(severity)} <code>{_e(f.get("slug"))}</code>'
                    f' <span class="mono muted">{_e(rendering.location(f.get("file"), f.get("line")))}</span></header>'
                    f'<div class="msg">{_e(f.get("message"))}</div>{hint}{sources.excerpt(f.get("file"), f.get("line"))}</div>'
                )
        else:
            section.append('<p class="muted">None.</p>')
        section.append("<h3>Runner call sites</h3>" + _call_sites_table(sites_of(protocol), with_protocol=False))
        section.append("</section>")
        parts.append("\n".join(section))
    return "\n".join(parts)


def _qualname_cell(qualname: str | None) -> str:
    """``Class.member`` to read, the module under it in grey (the full name wraps badly)."""
    if not qualname:
        return '<span class="muted">?</span>'
    parts = qualname.split(".")
    head, module = ".".join(parts[-2:]), ".".join(parts[:-2])
    if parts[0] == "self":  # an attribute path the engine could not type
        head, module = qualname, ""
    return f'<code class="q" title="{_e(qualname)}">{_e(head)}</code><br><span class="mono muted small">{_e(module)}</span>'


def _chain_table(chain: list[dict], bad: int | None, prefix: str) -> str:
    rows = []
    for index, hop in enumerate(chain):
        call = ""
        if hop.get("call_file") or hop.get("call_line"):
            call = f'<br><span class="muted wraps">called at {_where(hop.get("call_file"), hop.get("call_line"))}</span>'
        ids = _yes_no(hop.get("passes_ids")) if "passes_ids" in hop else ""
        how = hop.get("resolved_by") or ""
        if hop.get("reason"):
            how = (how + " — " if how else "") + hop["reason"]
        rows.append(
            f'<tr id="{_e(prefix)}-{index}" class="{"bad" if index == bad else ""}"><td>{index + 1}</td>'
            f'<td><span class="tag">{_e(hop.get("kind"))}</span></td>'
            f"<td>{_qualname_cell(hop.get('qualname'))}</td>"
            f'<td class="where">{_where(hop.get("file"), hop.get("line"))}{call}</td>'
            f"<td class=\"resolved\">{_e(how)}</td><td>{ids}</td></tr>"
        )
    return (
        '<div class="tablebox"><table><thead><tr><th>#</th><th>hop</th><th>qualname</th><th>where</th>'
        "<th>resolved by</th><th>passes ids</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------
# the report


MARKER = ".tracer-report"


def _clear_previous_report(out_dir: Path) -> None:
    """Remove the pages of an earlier report in out_dir, so no stale model page
    survives a rescan; only in a folder this command wrote (it has the marker)."""
    if not (out_dir / MARKER).is_file():
        return
    for folder, patterns in (("models", ("*.html",)), ("chains", ("*.dot", "*.svg"))):
        for pattern in patterns:
            for path in (out_dir / folder).glob(pattern):
                path.unlink(missing_ok=True)


def build_report(scan: dict, out_dir: Path, source_root: Path | None = None, jobs: int | None = None) -> dict:
    """Write the HTML report and pictures for ``scan`` into ``out_dir``.

    ``source_root`` is where the scanned files are read for excerpts (None: no
    excerpts).  Returns {"pages", "index", "pictures", "graphviz", "callgraph", "seconds", "message"}.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    _clear_previous_report(out_dir)
    (out_dir / "models").mkdir(parents=True, exist_ok=True)
    (out_dir / "chains").mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("made by `tracer report`; its pages are replaced on the next run\n", encoding="utf-8")
    graphviz = rendering.graphviz_available()

    models_list = scan.get("models") or []
    protocols = list(scan.get("protocols") or [])
    for model in models_list:
        if model.get("protocol") and model["protocol"] not in protocols:
            protocols.append(model["protocol"])
    entries: dict[str, dict[str, dict]] = defaultdict(dict)
    for model in sorted(models_list, key=lambda m: m.get("entry") or ""):
        entries[model.get("entry") or "?"][model.get("protocol") or "?"] = model
    findings = list(scan.get("findings") or [])
    by_model: dict[tuple, list] = defaultdict(list)
    for f in findings:
        for entry in rendering.finding_entries(f):
            by_model[(entry, f.get("protocol"))].append(f)
    sites: dict[str, list] = defaultdict(list)
    for site in scan.get("call_sites") or []:
        sites[site.get("protocol")].append(site)

    # The call graph is the one big layout: run it beside the chain batches.
    callgraph: dict = {}

    def draw_callgraph():
        try:
            callgraph.update(rendering.render(rendering.protocol_graph_dot(scan), "svg" if graphviz else "dot",
                                              out_dir / ("callgraph.svg" if graphviz else "callgraph.dot")))
        except Exception as error:  # a picture must never cost the report
            callgraph.update({"picture": None, "message": f"call graph failed: {error}"})

    worker = threading.Thread(target=draw_callgraph)
    worker.start()

    keys, sources_dot = [], []
    for entry, models in entries.items():
        for protocol, model in models.items():
            if not model.get("chain"):
                continue
            dot = rendering.chain_dot(model, by_model.get((entry, protocol)), link_prefix=_anchor(protocol))
            text = dot.to_string()
            (out_dir / "chains" / (_chain_name(entry, protocol) + ".dot")).write_text(text, encoding="utf-8")
            keys.append((entry, protocol))
            sources_dot.append(text)
    pictures: dict[tuple, str] = {}
    for key, svg in zip(keys, rendering.render_svgs(sources_dot, jobs=jobs)):
        if svg:
            (out_dir / "chains" / (_chain_name(*key) + ".svg")).write_text(svg, encoding="utf-8")
            pictures[key] = rendering.inline_svg(svg)

    pages = _Pages(scan)
    sources = _Sources(source_root)
    for asset in ("report.css", "report.js"):
        (out_dir / asset).write_text(_asset_text(asset), encoding="utf-8")
    framework = scan.get("framework") or {}
    framework_title = f"{framework.get('name') or ''} {framework.get('version') or ''}".strip()
    index_crumb = '<a href="../index.html">all entry classes</a>'
    for entry, models in entries.items():
        main = _model_main(
            entry, models, protocols,
            lambda e, p: by_model.get((e, p), []), lambda p: sites.get(p, []),
            pictures, sources, graphviz,
        )
        name = entry.rsplit(".", 1)[-1]
        text = pages.page(f"{name} — tracer", main, f"{_e(framework_title)} › {index_crumb} › {_e(name)}", "../", "model")
        (out_dir / "models" / rendering.page_name(entry)).write_text(text, encoding="utf-8")

    worker.join()
    main = _index_main(scan, entries, protocols, findings, by_model, graphviz, callgraph)
    index = out_dir / "index.html"
    index.write_text(pages.page(f"tracer report — {framework_title}", main, _e(framework_title), "", "index"), encoding="utf-8")
    return {
        "pages": len(entries),
        "index": str(index),
        "pictures": len(pictures),
        "graphviz": graphviz,
        "callgraph": str(callgraph.get("picture") or callgraph.get("dot") or ""),
        "seconds": round(time.perf_counter() - started, 3),
        "message": "" if graphviz else rendering.NO_GRAPHVIZ,
    }


# --------------------------------------------------------------------------
# commands


def _load_scan(path: str | None, scan_file: str | None, protocols: tuple, no_cache: bool) -> dict:
    if path and scan_file:
        raise click.UsageError("give PATH (a framework tree to scan) or --from SCAN.json, not both")
    if not path and not scan_file:
        raise click.UsageError("give PATH (a framework tree to scan) or --from SCAN.json (a saved `tracer scan --format json`)")
    if scan_file:
        try:
            scan = json.loads(Path(scan_file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise click.UsageError(f"cannot read scan JSON {scan_file}: {error}") from error
        if not isinstance(scan, dict) or "models" not in scan:
            raise click.UsageError(f"{scan_file} is not a tracer scan (no 'models')")
        return scan
    from tracer.engine import scan_to_json  # the engine is only needed to scan

    return scan_to_json(str(path), protocols=list(protocols) or None, use_cache=not no_cache)


def _source_root(path: str | None, source_root: str | None, scan: dict) -> Path | None:
    for candidate in (source_root, path, scan.get("root")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


@click.command("report")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--from", "scan_file", type=click.Path(exists=True, dir_okay=False), help="Build from a saved `tracer scan --format json`.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write the report into.")
@click.option("--protocol", "protocols", multiple=True, help="Protocol to scan (repeatable; default all).")
@click.option("--source-root", type=click.Path(exists=True, file_okay=False), help="Where the scanned files are, for excerpts (default: PATH or the scan's root).")
@click.option("--no-cache", is_flag=True, help="Do not use the scan cache.")
def report_command(path, scan_file, out_dir, protocols, source_root, no_cache):
    """Write an HTML report with Graphviz pictures of every capture chain.

    \b
    tracer report PATH -o DIR
    tracer report --from scan.json -o DIR
    """
    scan = _load_scan(path, scan_file, protocols, no_cache)
    summary = build_report(scan, Path(out_dir), _source_root(path, source_root, scan))
    click.echo(
        f"wrote {summary['index']} ({summary['pages']} entry-class pages, "
        f"{summary['pictures']} chain pictures) in {summary['seconds']:.1f} s"
    )
    if not summary["graphviz"]:
        click.echo(summary["message"], err=True)
