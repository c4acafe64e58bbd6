"""`tracer report`: an HTML report and Graphviz pictures built from the typed scan result.

The report needs nothing but the result (and, for source excerpts, the scanned
files under an explicit source root), so a saved scan can be turned into a report
later or on another machine: ``tracer report --from scan.json -o DIR``.

Layout of DIR::

    index.html              support matrix (entry class × protocol), counts, findings
    models/<entry>.html     one page per entry class: chain pictures, findings, call sites
    chains/<entry>.<protocol>.dot|svg   each chain picture
    source/<file>.html      the scanned files that hops and findings point at, every line an anchor
    callgraph.dot|svg       the value-flow call graph around the capture setters (else the protocol graph)
    report.css, report.js
    .tracer-report          the manifest: what this report wrote (the next run removes only these)

Templates are plain ``string.Template`` files under ``reports/`` (package
``tracer._reports``): the pages are a handful of tables built in Python with
every value escaped in one place (``escape_html``), which a template language would
not make shorter, and it keeps Jinja2 out of the dependencies.
"""

from __future__ import annotations

import string
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracer import __version__
from tracer.index.source import read_regular_bytes
from tracer.model.errors import UsageError
from tracer.model.results import CallSite, ModelResult, ScanResult
from tracer.present import callgraph_view
from tracer.present import render as rendering
from tracer.present.files import write_text_file
from tracer.present.graphs import findings_of, page_name, protocol_graph
from tracer.present.report_pages import Excerpts, anchor, chain_name, escape_html, index_main, model_main
from tracer.present.report_source import FOLDER, SourceLinks, source_page, write_sources
from tracer.present.text import TextOptions, shown_findings
from tracer.safeio.write import Unwritable, make_folder


def _assets_dir() -> Any:
    """The templates: ``reports/`` in a checkout, ``tracer._reports`` when installed."""
    checkout = Path(__file__).resolve().parents[2] / "reports"
    if (checkout / "page.html").is_file():
        return checkout
    from importlib.resources import files

    return files("tracer._reports")


def _asset_text(name: str) -> str:
    return str(_assets_dir().joinpath(name).read_text(encoding="utf-8"))


class _Pages:
    """Fills page.html; the template is read once per report."""

    def __init__(self, scan: ScanResult):
        self.template = string.Template(_asset_text("page.html"))
        self.tool_version = scan.tool_version or __version__

    def page(self, title: str, main: str, crumbs: str, assets: str, body_class: str) -> str:
        return self.template.substitute(
            title=escape_html(title), main=main, crumbs=crumbs, assets=assets,
            body_class=body_class, tool_version=escape_html(self.tool_version),
        )


# --------------------------------------------------------------------------
# the report


MANIFEST = ".tracer-report"  # the files the last report wrote, one per line, relative to the folder


def _clear_previous_report(out_dir: Path) -> None:
    """Remove the files an earlier report listed in its manifest (so no stale model
    page survives a rescan), and nothing else: never a file the manifest does not
    name, never through a link, never outside the folder."""
    manifest = out_dir / MANIFEST
    data = read_regular_bytes(manifest, 4 * 1024 * 1024, out_dir) if not manifest.is_symlink() else None
    if data is None:
        return
    root = out_dir.resolve()
    for line in data.decode("utf-8", errors="replace").splitlines():
        relative = Path(line)
        if not line or relative.is_absolute() or ".." in relative.parts:
            continue
        path = out_dir / relative
        through_link = any((out_dir / Path(*relative.parts[:i])).is_symlink() for i in range(1, len(relative.parts) + 1))
        if through_link or not path.resolve().is_relative_to(root):
            continue
        if path.is_file():
            path.unlink()


def _write_manifest(out_dir: Path, written: list[Path]) -> None:
    names = sorted({str(p.relative_to(out_dir)) for p in written if p.is_relative_to(out_dir)})
    write_text_file(out_dir / MANIFEST, "\n".join(names) + "\n", out_dir)


def _folder(path: Path) -> Path:
    """A folder the report writes into: created, never a link."""
    if path.is_symlink():
        raise UsageError(f"{path}: is a symbolic link; tracer report does not write through links")
    try:
        return make_folder(path)
    except Unwritable as exc:  # a folder on the way is a link
        raise UsageError(str(exc)) from None


def build_report(scan: ScanResult, out_dir: Path, source_root: Path | None = None, jobs: int | None = None,  # type: ignore[type-arg]
                 protocol_order: Sequence[str] = (), call_graph: Any = None, call_graph_note: str = "") -> dict:
    """Write the HTML report and pictures for ``scan`` into ``out_dir``.

    ``source_root`` is where the scanned files are read for excerpts (None: no
    excerpts). ``call_graph`` (a networkx DiGraph of the value-flow call graph, e.g. the
    capture setters' neighbourhood) is what callgraph.svg draws; None: the protocol graph,
    and ``call_graph_note`` says why.  Returns {"pages", "index", "pictures", "graphviz", "callgraph", "seconds", "message"}.
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    _folder(out_dir)
    _clear_previous_report(out_dir)
    _folder(out_dir / "models")
    _folder(out_dir / "chains")
    written: list[Path] = []
    graphviz = rendering.graphviz_available()

    protocols = list(scan.protocols)
    for model in scan.models:
        if model.protocol and model.protocol not in protocols:
            protocols.append(model.protocol)
    rank = {name: i for i, name in enumerate(protocol_order)}
    protocols.sort(key=lambda p: (rank.get(p, len(rank)), p))  # EAGLE-3 first (the packs' rank), then by name
    entries: dict[str, dict[str, ModelResult]] = defaultdict(dict)
    for model in sorted(scan.models, key=lambda m: m.entry):
        entries[model.entry][model.protocol] = model
    # counted as `tracer scan` counts them: one per place and message, naming every protocol
    findings = shown_findings(scan, TextOptions(show_info=True, protocol_order=tuple(protocols)))
    by_model = findings_of(scan)
    sites: dict[str, list[CallSite]] = defaultdict(list)
    for site in scan.call_sites:
        sites[site.protocol].append(site)

    # The call graph is the one big layout: run it beside the chain batches.
    callgraph: dict = {}

    def draw_callgraph():
        try:
            if call_graph is not None:
                dot = callgraph_view.call_graph_dot(call_graph)
                assumed = callgraph_view.assumed_edges(call_graph)
                caption = (f"The value-flow call graph (<code>tracer graph --all</code>) around the capture setters: "
                           f"{len(call_graph)} functions, {call_graph.number_of_edges()} calls, each setter with "
                           f"what calls it and what it calls (highlighted: the setters; boxed by module). "
                           f"{call_graph.number_of_edges() - sum(assumed.values())} calls are proven by values"
                           + "".join(f"; {n} (dashed) are assumed: {escape_html(callgraph_view.ASSUMED_WHY.get(why, why))}"
                                     for why, n in assumed.items()))
            else:
                dot = rendering.protocol_graph_dot(protocol_graph(scan, "models/{page}"))
                caption = ("The whole protocol subgraph (every traced chain and the runner call sites), "
                           "clustered by module" + (f" ({escape_html(call_graph_note)})" if call_graph_note else ""))
            callgraph.update(rendering.render(dot, "svg" if graphviz else "dot",
                                              out_dir / ("callgraph.svg" if graphviz else "callgraph.dot")))
            callgraph["caption"] = caption
        except Exception as error:  # a picture must never cost the report
            callgraph.update({"picture": None, "message": f"call graph failed: {error}"})

    worker = threading.Thread(target=draw_callgraph)
    worker.start()

    keys, sources_dot = [], []
    for entry, models in entries.items():
        for protocol, model in models.items():
            if not model.chain:
                continue
            dot = rendering.chain_dot(model, by_model.get((entry, protocol), ()), link_prefix=anchor(protocol))
            text = dot.to_string()
            written.append(write_text_file(out_dir / "chains" / (chain_name(entry, protocol) + ".dot"), text, out_dir))
            keys.append((entry, protocol))
            sources_dot.append(text)
    pictures: dict[tuple, str] = {}
    for key, svg in zip(keys, rendering.render_svgs(sources_dot, jobs=jobs)):
        if svg:
            written.append(write_text_file(out_dir / "chains" / (chain_name(*key) + ".svg"), svg, out_dir))
            pictures[key] = rendering.inline_svg(svg)

    pages = _Pages(scan)
    sources = Excerpts(source_root)
    for asset in ("report.css", "report.js"):
        written.append(write_text_file(out_dir / asset, _asset_text(asset), out_dir))
    framework_title = f"{scan.framework.name} {scan.framework.version}".strip()
    index_crumb = '<a href="../index.html">all entry classes</a>'
    source_pages = write_sources(scan, sources)
    if source_pages:
        _folder(out_dir / FOLDER)
    for file, source_main in source_pages.items():
        name = file.rsplit("/", 1)[-1]
        written.append(write_text_file(out_dir / source_page(file), pages.page(
            f"{name} — tracer", source_main, f"{escape_html(framework_title)} › {index_crumb} › {escape_html(file)}", "../", "source")))
    links = SourceLinks(source_pages)
    for entry, models in entries.items():
        main = model_main(
            entry, models, protocols,
            lambda e, p: by_model.get((e, p), []), lambda p: sites.get(p, []),
            pictures, sources, graphviz, lambda file, line: links.where(file, line, "../"),
        )
        name = entry.rsplit(".", 1)[-1]
        text = pages.page(f"{name} — tracer", main, f"{escape_html(framework_title)} › {index_crumb} › {escape_html(name)}", "../", "model")
        written.append(write_text_file(out_dir / "models" / page_name(entry), text, out_dir))

    worker.join()
    main = index_main(scan, entries, protocols, findings, by_model, graphviz, callgraph, links.where)
    index_file = write_text_file(out_dir / "index.html",
                                 pages.page(f"tracer report — {framework_title}", main, escape_html(framework_title), "", "index"),
                                 out_dir)
    written.append(index_file)
    for kind in ("picture", "dot"):
        if callgraph.get(kind):
            written.append(Path(callgraph[kind]))
    _write_manifest(out_dir, written)
    return {
        "pages": len(entries),
        "index": str(index_file),
        "pictures": len(pictures),
        "sources": len(source_pages),
        "graphviz": graphviz,
        "callgraph": str(callgraph.get("picture") or callgraph.get("dot") or ""),
        "seconds": round(time.perf_counter() - started, 3),
        "message": "" if graphviz else rendering.NO_GRAPHVIZ,
    }


