"""Graphviz pictures (pydot → DOT → dot) of the typed results.

Two pictures: one model's chain (entry → setter → delegates → state write →
readers) and the protocol graph (graphs.py, the one graph model) clustered by
module. DOT is always produced; SVG/PNG only when Graphviz's ``dot`` is on PATH,
and its absence is reported, never raised.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import networkx as nx
import pydot

from tracer.model.findings import Finding
from tracer.model.results import Hop, ModelResult
from tracer.present.files import write_bytes_file, write_text_file
from tracer.present.graphs import calling_hop, hop_problem, hop_source, location, module_of_file, short_name

FONT = "Helvetica,Arial,sans-serif"
INK = "#3c4043"
MUTED = "#80868b"
RED = "#d62728"
RED_FILL = "#fdecea"
ORANGE = "#e37400"

# Node look per hop kind: (shape, fill colour, border colour).
HOP_STYLE = {
    "entry": ("box", "#e8f0fe", "#1a73e8"),
    "setter": ("box", "#ffffff", INK),
    "delegate": ("box", "#ffffff", INK),
    "write": ("note", "#fef7e0", "#b06000"),
    "read": ("box", "#e6f4ea", "#188038"),
    "unresolved": ("box", RED_FILL, RED),
    "runner": ("box", "#f3e8fd", "#8430ce"),
    "dispatch": ("box", "#f3e8fd", "#8430ce"),
}

NO_GRAPHVIZ = (
    "Pictures need Graphviz: install it (Debian/Ubuntu: apt-get install graphviz) "
    "so that `dot` is on PATH. The DOT files were written and can be rendered later "
    "with `dot -Tsvg FILE.dot -o FILE.svg`."
)


def _text(value: str, width: int = 0) -> str:
    """Make arbitrary text safe inside a quoted DOT string (and wrap it)."""
    value = str(value).replace("\\", "\\\\").replace("\r", " ")
    lines = []
    for raw in value.split("\n"):
        lines.extend(textwrap.wrap(raw, width) if width and len(raw) > width else [raw])
    value = "\\n".join(lines)
    if value.startswith("<") and value.endswith(">"):
        value = " " + value  # would otherwise read as an HTML-like label
    return value


def _html_label(title: str, detail: str = "", color: str = "#5f6368") -> str:
    """A two-line node label: the class in bold, what of it in small grey text."""
    title_html = html.escape(title or "?", quote=False)
    label = f"<B>{title_html}</B>"
    if detail:
        label += f'<BR/><FONT POINT-SIZE="9" COLOR="{color}">{html.escape(detail, quote=False)}</FONT>'
    return f"<{label}>"


def _hop_label(qualname: str, kind: str, reason: str = "") -> str:
    owner, _, member = qualname.rpartition(".")
    if not owner.startswith("self"):  # self.model: an attribute path, keep it whole
        owner = owner.rsplit(".", 1)[-1] if owner else (member or "?")
    if kind == "write":
        return _html_label(owner, f"self.{member} = …", "#b06000")
    if kind == "read":
        return _html_label(owner, f"{member}() reads it", "#188038")
    if kind == "unresolved":
        if not qualname:
            return _html_label("? unresolved", textwrap.shorten(reason, 48) if reason else "", RED)
        return _html_label(owner, f"? {member}", RED)
    return _html_label(owner, f".{member}()" if member else "")


def _node_id(name: str) -> str:
    # Quoted by pydot; only the backslash needs care.
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _base_graph(name: str, rankdir: str = "LR") -> pydot.Dot:
    graph = pydot.Dot(
        _text(name),
        graph_type="digraph",
        rankdir=rankdir,
        fontname=FONT,
        fontsize="11",
        bgcolor="transparent",
        nodesep="0.25",
        ranksep="0.45",
        pad="0.15",
    )
    graph.set_node_defaults(
        fontname=FONT, fontsize="11", style="filled,rounded", shape="box",
        color=INK, fontcolor="#202124", penwidth="1.2", margin="0.12,0.06",
    )
    graph.set_edge_defaults(
        fontname=FONT, fontsize="9", color=MUTED, fontcolor="#5f6368", arrowsize="0.7",
    )
    return graph


def _legend(graph: pydot.Dot, with_runner: bool = False) -> None:
    rows = [
        ("#e8f0fe", "#1a73e8", "entry class (registered)"),
        ("#ffffff", INK, "setter method (own / inherited / delegate)"),
        ("#fef7e0", "#b06000", "state write"),
        ("#e6f4ea", "#188038", "reader (forward loop)"),
        (RED_FILL, RED, "broken hop (dashed border: not traced, unknown)"),
    ]
    if with_runner:
        rows.append(("#f3e8fd", "#8430ce", "runner call site"))
    cells = "".join(
        f'<TR><TD BGCOLOR="{fill}" COLOR="{border}" BORDER="1" WIDTH="14" HEIGHT="10"></TD>'
        f'<TD ALIGN="LEFT">{label}</TD></TR>'
        for fill, border, label in rows
    )
    table = (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">'
        '<TR><TD COLSPAN="2" ALIGN="LEFT"><B>legend</B></TD></TR>'
        f"{cells}"
        '<TR><TD COLSPAN="2" ALIGN="LEFT"><FONT COLOR="#5f6368">edge label: how the hop was resolved</FONT></TD></TR>'
        "</TABLE>>"
    )
    legend = pydot.Cluster("legend", label="", style="rounded", color="#dadce0", fontsize="9")
    legend.add_node(pydot.Node("legend", label=table, shape="plain", style="", fontsize="9"))
    graph.add_subgraph(legend)  # type: ignore[arg-type]  # pydot's stubs: a Cluster is a Subgraph


def _style_node(node: pydot.Node, kind: str, bad: bool) -> None:
    shape, fill, border = HOP_STYLE.get(kind, HOP_STYLE["setter"])
    node.set("shape", shape)
    node.set("fillcolor", RED_FILL if bad else fill)
    node.set("color", RED if bad else border)
    if bad:
        node.set("penwidth", "2.2")
        node.set("fontcolor", RED)
        node.set("class", "hop-bad")
    if shape == "note":
        node.set("style", "filled")


# --------------------------------------------------------------------------
# one model's chain


def chain_dot(model: ModelResult, findings: Sequence[Finding] = (), link_prefix: str | None = None,
              protocol_label: bool = False) -> pydot.Dot:
    """The chain of one (entry class, protocol): entry → setter → delegates → write → readers.

    ``findings`` (this model's findings) sharpen which hop is drawn red;
    ``link_prefix`` makes each node a link to ``#<prefix>-<hop index>``.
    """
    entry, chain = model.entry, model.chain
    bad_index = hop_problem(model, findings)
    graph = _base_graph(f"{short_name(entry)} {model.protocol}", rankdir="TB")
    if protocol_label:
        graph.set("label", _text(f"{entry.rsplit('.', 1)[-1]} · {model.protocol} · {model.verdict}"))
        graph.set("labelloc", "t")

    entry_id = _node_id("entry:" + entry)
    entry_node = pydot.Node(
        entry_id,
        label=_html_label(entry.rsplit(".", 1)[-1], "entry class · " + module_of_file(model.file).rsplit(".", 1)[-1],
                          "#1a73e8"),
        tooltip=_text(f"{entry}\n{location(model.file, model.line)}"),
        fontsize="12",
    )
    _style_node(entry_node, "entry", False)
    entry_node.set("penwidth", "1.6")
    graph.add_node(entry_node)

    previous = entry_id  # the setter that makes the next call or write
    write_id: str | None = None
    hop_ids: list[str] = []
    for index, hop in enumerate(chain):
        kind = hop.kind
        bad = index == bad_index
        node_id = _node_id(f"hop{index}:{hop.qualname or '?'}")
        tip = [hop.qualname or "?", location(hop.file, hop.line)]
        if hop.call_file:
            tip.append("called at " + location(hop.call_file, hop.call_line))
        if hop.resolved_by:
            tip.append("resolved by: " + hop.resolved_by)
        if hop.reason:
            tip.append("reason: " + hop.reason)
        node = pydot.Node(node_id, label=_hop_label(hop.qualname, kind, hop.reason), tooltip=_text("\n".join(tip)))
        _style_node(node, kind, bad)
        if bad and model.verdict == "unknown":
            node.set("style", "filled,rounded,dashed")
        if link_prefix:
            node.set("URL", _text(f"#{link_prefix}-{index}"))
            node.set("target", "_self")
        graph.add_node(node)

        source = hop_source(chain, index, previous, write_id, hop_ids, calling_hop(chain, index))
        hop_ids.append(node_id)
        graph.add_edge(_hop_edge(source, node_id, hop, bad, model.verdict == "unknown"))
        if kind == "write":
            write_id = node_id
        elif kind in ("setter", "delegate"):
            previous, write_id = node_id, None

    if bad_index is not None and chain[bad_index].kind == "write" and not any(
            hop.kind == "read" for hop in chain[bad_index + 1:]):
        # a dead write: show the reader that is not there
        graph.add_node(pydot.Node(_node_id("no-reader"), label="no reader", shape="box", style="dashed,rounded",
                                  color=RED, fontcolor=RED, tooltip="no method of the state owner reads it"))
        graph.add_edge(pydot.Edge(hop_ids[bad_index], _node_id("no-reader"), style="dashed", color=RED,
                                  arrowhead="empty"))

    if not chain:
        reason = model.reason or {"missing": "no setter in the entry class's MRO"}.get(model.verdict, "no chain")
        none = pydot.Node(_node_id("none"), label=_text(reason, 40), shape="plaintext", style="", fontcolor=MUTED)
        graph.add_node(none)
        graph.add_edge(pydot.Edge(entry_id, _node_id("none"), style="dotted", arrowhead="none"))
    _legend(graph)
    return graph


def _hop_edge(source: str, node_id: str, hop: Hop, bad: bool, unknown: bool) -> pydot.Edge:
    edge_label = hop.resolved_by or hop.kind
    if hop.kind == "unresolved" and hop.reason:
        edge_label = hop.reason
    if hop.kind == "delegate" and hop.call_line:
        edge_label = f"call at {Path(hop.call_file).name}:{hop.call_line}\n{edge_label}"
    edge = pydot.Edge(source, node_id, label=_text(edge_label, 42), tooltip=_text(edge_label))
    if hop.passes_ids is False:
        edge.set("label", _text("NO IDS\n" + edge_label, 42))
        edge.set("color", ORANGE)
        edge.set("fontcolor", ORANGE)
        edge.set("style", "dashed")
    if bad:
        edge.set("color", RED)
        edge.set("fontcolor", RED)
        edge.set("penwidth", "2")
        edge.set("class", "hop-bad")
        if unknown:
            edge.set("style", "dashed")
    if hop.kind == "read":
        edge.set("arrowhead", "empty")
    return edge


# --------------------------------------------------------------------------
# the whole protocol subgraph


def protocol_graph_dot(graph: nx.DiGraph) -> pydot.Dot:
    """The protocol graph (graphs.protocol_graph), clustered by module. Nodes and
    edges are added in sorted order so the same scan always gives the same DOT."""
    dot = _base_graph("callgraph")
    dot.set("newrank", "true")
    dot.set("concentrate", "true")
    dot.set("ranksep", "0.6")
    clusters: dict[str, pydot.Cluster] = {}
    for module in sorted({data["module"] for _, data in graph.nodes(data=True)}):
        cluster = pydot.Cluster(
            "m_" + re.sub(r"\W", "_", module), label=_text(module), style="rounded,filled",
            fillcolor="#f8f9fa", color="#dadce0", fontcolor="#5f6368", fontsize="10", tooltip=_text(module),
        )
        clusters[module] = cluster
        dot.add_subgraph(cluster)  # type: ignore[arg-type]
    for key in sorted(graph.nodes):
        data = graph.nodes[key]
        node = pydot.Node(_node_id(key), label=_node_label(key, data),
                          tooltip=_text("\n".join(sorted(data["tips"]))))
        _style_node(node, "runner" if data["kind"] == "dispatch" else data["kind"], data["bad"])
        if data.get("url"):
            node.set("URL", _text(data["url"]))
        clusters[data["module"]].add_node(node)
    for source, target in sorted(graph.edges):
        data = graph.edges[source, target]
        if data["kind"] == "reads":  # drawn from the state to its reader
            source, target = target, source
        label = "; ".join(sorted(data["hows"]))
        protocols = ", ".join(sorted(data["protocols"]))
        edge = pydot.Edge(_node_id(source), _node_id(target), tooltip=_text(f"{protocols}: {label}" if label else protocols))
        if data["no_ids"]:
            edge.set("color", ORANGE)
            edge.set("style", "dashed")
        if data["bad"]:
            edge.set("color", RED)
            edge.set("penwidth", "1.8")
        dot.add_edge(edge)
    _legend(dot, with_runner=True)
    return dot


def _node_label(key: str, data: dict) -> str:  # type: ignore[type-arg]
    kind = data["kind"]
    if kind == "entry":
        return _html_label(key.rsplit(".", 1)[-1])
    if kind == "runner":
        return _html_label(*short_name(data["qualname"]).rsplit(".", 1))
    if kind == "dispatch":
        return _html_label(f"{data['qualname']}(ids)",
                           f"{data['protocol']}: any of {data['traced']} traced entry classes")
    return _hop_label(data.get("qualname") or "", kind, data.get("reason") or "")


# --------------------------------------------------------------------------
# rendering


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def _run_dot(source: str, fmt: str, timeout: float = 120) -> tuple[bytes | None, str]:
    try:
        done = subprocess.run(
            ["dot", f"-T{fmt}"], input=source.encode("utf-8"), capture_output=True, timeout=timeout
        )
    except (OSError, subprocess.SubprocessError) as error:
        return None, f"dot failed: {error}"
    if done.returncode != 0:
        return None, "dot failed: " + done.stderr.decode("utf-8", "replace").strip()[:500]
    return done.stdout, ""


def render(dot: pydot.Dot, fmt: str, path: Path | str) -> dict:  # type: ignore[type-arg]
    """Write ``path`` with suffix .dot always, and ``path`` in ``fmt`` when Graphviz is there.

    Returns {"dot": Path, "picture": Path | None, "message": str}; never raises
    for a missing or failing Graphviz (the message says what happened).
    """
    path = Path(path)
    fmt = fmt.lower()
    if fmt not in ("dot", "svg", "png"):
        raise ValueError(f"unknown picture format {fmt!r} (dot, svg or png)")
    dot_path = path if fmt == "dot" else path.with_suffix(".dot")
    source = dot.to_string()
    write_text_file(dot_path, source)
    if fmt == "dot":
        return {"dot": dot_path, "picture": None, "message": ""}
    if not graphviz_available():
        return {"dot": dot_path, "picture": None, "message": NO_GRAPHVIZ}
    output, message = _run_dot(source, fmt)
    if output is None:
        return {"dot": dot_path, "picture": None, "message": message}
    if fmt == "svg":
        output = add_svg_titles(output.decode("utf-8", "replace")).encode("utf-8")
    write_bytes_file(path, output)
    return {"dot": dot_path, "picture": path, "message": ""}


_SVG_START = re.compile(rb"(?=<\?xml )")


def render_svgs(sources: list[str], jobs: int | None = None) -> list[str | None]:
    """Lay out many small DOT graphs into SVG text with a few ``dot`` processes.

    Starting ``dot`` costs more than laying out a chain, so graphs are fed in
    batches (``dot`` reads every graph of its input and writes one SVG each)
    across ``jobs`` processes.  A batch that fails is retried graph by graph
    so one bad graph costs only its own picture.  None where no SVG came out.
    """
    if not sources:
        return []
    if not graphviz_available():
        return [None] * len(sources)
    jobs = max(1, min(jobs or (os.cpu_count() or 1), 8, len(sources)))
    size = -(-len(sources) // jobs)
    batches = [list(range(start, min(start + size, len(sources)))) for start in range(0, len(sources), size)]
    results: list[str | None] = [None] * len(sources)

    def run_batch(indexes: list[int]) -> None:
        output, _ = _run_dot("\n".join(sources[i] for i in indexes), "svg", timeout=300)
        pieces = [p for p in _SVG_START.split(output or b"") if p.strip()]
        if output is not None and len(pieces) == len(indexes):
            for index, piece in zip(indexes, pieces):
                results[index] = add_svg_titles(piece.decode("utf-8", "replace"))
            return
        for index in indexes:
            single, _ = _run_dot(sources[index], "svg")
            results[index] = add_svg_titles(single.decode("utf-8", "replace")) if single else None

    with ThreadPoolExecutor(max_workers=len(batches)) as pool:
        list(pool.map(run_batch, batches))
    return results


_LINK_TITLE = re.compile(r'(<a\b[^>]*?\bxlink:title="([^"]*)"[^>]*>)')


def add_svg_titles(svg: str) -> str:
    """Give every linked shape a <title> child, which browsers show on hover.

    Graphviz puts a tooltip into ``xlink:title`` on the <a> it wraps around the
    shape, and browsers ignore that attribute; the group's own <title> is the
    internal node name.  The innermost <title> wins, so add one per <a>.
    """
    return _LINK_TITLE.sub(lambda m: f"{m.group(1)}<title>{m.group(2)}</title>", svg)


_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def inline_svg(svg: str) -> str:
    """SVG text fit to sit inside an HTML page: no XML prolog, DOCTYPE or comments."""
    svg = _PROLOG.sub("", svg, count=1)
    svg = _COMMENT.sub("", svg)
    return svg.strip()
