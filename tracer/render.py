"""Graphviz pictures of capture chains, built from the scan JSON (pydot → DOT → dot).

Two pictures: one model's chain (entry → setter → delegates → state write →
readers) and the whole protocol subgraph clustered by module.  DOT is always
produced; SVG/PNG only when Graphviz's ``dot`` is on PATH, and its absence is
reported, never raised.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import textwrap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pydot

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
}

NO_GRAPHVIZ = (
    "Pictures need Graphviz: install it (Debian/Ubuntu: apt-get install graphviz) "
    "so that `dot` is on PATH. The DOT files were written and can be rendered later "
    "with `dot -Tsvg FILE.dot -o FILE.svg`."
)


# --------------------------------------------------------------------------
# small text helpers (shared with the HTML report)


def module_of_file(file: str | None) -> str:
    """``sglang/srt/models/x.py`` → ``sglang.srt.models.x`` (packages drop ``__init__``)."""
    if not file:
        return "?"
    name = file[:-3] if file.endswith(".py") else file
    parts = [p for p in re.split(r"[\\/]+", name) if p and p != "."]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or "?"


def short_name(qualname: str | None) -> str:
    """The last two dotted parts: ``Class.method`` or ``Owner.attribute``."""
    if not qualname:
        return "?"
    return ".".join(qualname.split(".")[-2:])


def location(file: str | None, line: int | None) -> str:
    if not file:
        return "?"
    return f"{file}:{line}" if line else file


def finding_entries(finding: dict) -> list[str]:
    """The entry classes a finding is about: ``entries`` when the scan shares one
    finding in common code among many classes, else ``entry`` (none: a runner finding)."""
    entries = finding.get("entries")
    if entries:
        return [e for e in entries if e]
    return [finding["entry"]] if finding.get("entry") else []


def hop_problem(model: dict, findings: list[dict] | None = None) -> int | None:
    """Index of the hop to draw red, or None when the chain is clean.

    The scan JSON does not flag hops itself, so a hop is bad when it is an
    ``unresolved`` hop, carries an explicit ``status``/``broken`` marker, or
    an error/warning finding of this model points at its line or its call
    line.  A broken or unknown chain with no such hop breaks after its last hop.
    """
    chain = model.get("chain") or []
    for index, hop in enumerate(chain):
        if hop.get("kind") == "unresolved" or hop.get("broken") or hop.get("status") in ("broken", "unknown"):
            return index
    if model.get("verdict") not in ("broken", "unknown"):
        return None  # warnings on a working chain are listed, not drawn red
    for severities in (("error",), ("warning",)):
        spots = {
            (finding.get("file"), finding.get("line"))
            for finding in findings or []
            if finding.get("severity", "error") in severities
        }
        for index, hop in enumerate(chain):
            if (hop.get("file"), hop.get("line")) in spots or (
                hop.get("call_file"), hop.get("call_line")
            ) in spots:
                return index
    return len(chain) - 1 if chain else None


def _calling_hop(chain: list[dict], index: int) -> int | None:
    """The earlier setter/delegate hop whose body holds this hop's call line.

    The chain is flat, so a setter that delegates twice (one call per branch)
    lists both delegations one after the other; the call line says which
    method really makes each call.  None when the call line says nothing.
    """
    hop = chain[index]
    call_file, call_line = hop.get("call_file"), hop.get("call_line")
    if not call_file or not call_line:
        return None
    best = None
    for earlier in range(index):
        other = chain[earlier]
        if other.get("kind") not in ("setter", "delegate") or other.get("file") != call_file:
            continue
        if (other.get("line") or 0) <= call_line and (best is None or (other.get("line") or 0) >= (chain[best].get("line") or 0)):
            best = earlier
    return best


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


def _hop_label(hop: dict, kind: str) -> str:
    qualname = hop.get("qualname") or ""
    owner, _, member = qualname.rpartition(".")
    if not owner.startswith("self"):  # self.model: an attribute path, keep it whole
        owner = owner.rsplit(".", 1)[-1] if owner else (member or "?")
    if kind == "write":
        return _html_label(owner, f"self.{member} = …", "#b06000")
    if kind == "read":
        return _html_label(owner, f"{member}() reads it", "#188038")
    if kind == "unresolved":
        if not qualname:
            return _html_label("? unresolved", hop.get("reason") and textwrap.shorten(hop["reason"], 48) or "", RED)
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
        ("#e8f0fe", "#1a73e8", "entry class (EntryClass)"),
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
    graph.add_subgraph(legend)


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


def chain_dot(model: dict, findings: list[dict] | None = None, link_prefix: str | None = None) -> pydot.Dot:
    """The chain of one (entry class, protocol): entry → setter → delegates → write → readers.

    ``findings`` (this model's finding records) sharpen which hop is drawn red;
    ``link_prefix`` makes each node a link to ``#<prefix>-<hop index>``.
    """
    entry = model.get("entry") or "?"
    protocol = model.get("protocol") or "?"
    chain = model.get("chain") or []
    bad_index = hop_problem(model, findings)
    graph = _base_graph(f"{short_name(entry)} {protocol}", rankdir="TB")

    entry_id = _node_id("entry:" + entry)
    entry_node = pydot.Node(
        entry_id,
        label=_html_label(entry.rsplit(".", 1)[-1], "entry class · " + module_of_file(model.get("file")).rsplit(".", 1)[-1], "#1a73e8"),
        tooltip=_text(f"{entry}\n{location(model.get('file'), model.get('line'))}"),
        fontsize="12",
    )
    _style_node(entry_node, "entry", False)
    entry_node.set("penwidth", "1.6")
    graph.add_node(entry_node)

    previous = entry_id  # the setter that makes the next call or write
    write_id = None
    hop_ids: list[str] = []
    for index, hop in enumerate(chain):
        kind = hop.get("kind") or "unresolved"
        bad = index == bad_index
        node_id = _node_id(f"hop{index}:{hop.get('qualname') or '?'}")
        where = location(hop.get("file"), hop.get("line"))
        tip = [hop.get("qualname") or "?", where]
        if hop.get("call_file"):
            tip.append("called at " + location(hop.get("call_file"), hop.get("call_line")))
        if hop.get("resolved_by"):
            tip.append("resolved by: " + hop["resolved_by"])
        if hop.get("reason"):
            tip.append("reason: " + hop["reason"])
        node = pydot.Node(node_id, label=_hop_label(hop, kind), tooltip=_text("\n".join(tip)))
        _style_node(node, kind, bad)
        if bad and model.get("verdict") == "unknown":
            node.set("style", "filled,rounded,dashed")
        if link_prefix:
            node.set("URL", _text(f"#{link_prefix}-{index}"))
            node.set("target", "_self")
        graph.add_node(node)

        source = write_id if kind == "read" and write_id else previous
        caller = _calling_hop(chain, index)
        if kind == "delegate" and caller is not None:
            source = hop_ids[caller]
        hop_ids.append(node_id)
        edge_label = hop.get("resolved_by") or kind
        if kind == "unresolved" and hop.get("reason"):
            edge_label = hop["reason"]
        if kind == "delegate" and hop.get("call_line"):
            edge_label = f"call at {Path(hop.get('call_file') or '').name}:{hop['call_line']}\n{edge_label}"
        edge = pydot.Edge(source, node_id, label=_text(edge_label, 42), tooltip=_text(edge_label))
        if hop.get("passes_ids") is False:
            edge.set("label", _text("NO IDS\n" + edge_label, 42))
            edge.set("color", ORANGE)
            edge.set("fontcolor", ORANGE)
            edge.set("style", "dashed")
        if bad:
            edge.set("color", RED)
            edge.set("fontcolor", RED)
            edge.set("penwidth", "2")
            edge.set("class", "hop-bad")
            if model.get("verdict") == "unknown":
                edge.set("style", "dashed")
        if kind == "read":
            edge.set("arrowhead", "empty")
        graph.add_edge(edge)

        # Writes and delegations hang off the setter that makes them; reads
        # off the write they read (a setter may write, then delegate on).
        if kind == "write":
            write_id = node_id
        elif kind in ("setter", "delegate"):
            previous, write_id = node_id, None

    if bad_index is not None and chain[bad_index].get("kind") == "write" and not any(
        hop.get("kind") == "read" for hop in chain[bad_index + 1:]
    ):
        # a dead write: show the reader that is not there
        graph.add_node(pydot.Node(_node_id("no-reader"), label="no reader", shape="box", style="dashed,rounded",
                                  color=RED, fontcolor=RED, tooltip="no method of the state owner reads it"))
        graph.add_edge(pydot.Edge(hop_ids[bad_index], _node_id("no-reader"), style="dashed", color=RED, arrowhead="empty"))

    if not chain:
        reason = model.get("reason") or {
            "missing": "no setter in the entry class's MRO",
        }.get(model.get("verdict"), "no chain")
        none = pydot.Node(_node_id("none"), label=_text(reason, 40), shape="plaintext", style="", fontcolor=MUTED)
        graph.add_node(none)
        graph.add_edge(pydot.Edge(entry_id, _node_id("none"), style="dotted", arrowhead="none"))
    _legend(graph)
    return graph


# --------------------------------------------------------------------------
# the whole protocol subgraph


def protocol_graph_dot(scan: dict, models_href: str | None = "models/{page}") -> pydot.Dot:
    """Every traced chain of the scan in one graph, clustered by module.

    Entry classes with no setter (verdict ``missing``) are left out: they have
    no chain and only crowd the picture (the support matrix lists them).
    Nodes are added in sorted order so the same scan always gives the same DOT.
    """
    findings_by_model: dict[tuple, list] = {}
    for finding in scan.get("findings") or []:
        for entry in finding_entries(finding):
            findings_by_model.setdefault((entry, finding.get("protocol")), []).append(finding)

    nodes: dict[str, dict] = {}  # node id → attributes (module, label, kind, bad, tooltip, url)
    edges: dict[tuple[str, str], dict] = {}

    def add_node(key: str, module: str, label: str, kind: str, tooltip: str, bad: bool = False, url: str | None = None):
        # label is an HTML-like label (see _html_label)
        record = nodes.setdefault(key, {"module": module, "label": label, "kind": kind, "tips": set(), "bad": False, "url": url})
        record["tips"].add(tooltip)
        record["bad"] = record["bad"] or bad

    def add_edge(source: str, target: str, label: str, protocol: str, bad: bool = False, no_ids: bool = False):
        record = edges.setdefault((source, target), {"labels": set(), "protocols": set(), "bad": False, "no_ids": False})
        if label:
            record["labels"].add(label)
        record["protocols"].add(protocol)
        record["bad"] = record["bad"] or bad
        record["no_ids"] = record["no_ids"] or no_ids

    setters_by_protocol: dict[str, set] = {}
    for model in scan.get("models") or []:
        chain = model.get("chain") or []
        if not chain:
            continue
        protocol = model.get("protocol") or "?"
        entry = model.get("entry") or "?"
        bad_index = hop_problem(model, findings_by_model.get((entry, protocol)))
        entry_key = "class:" + entry
        add_node(
            entry_key, module_of_file(model.get("file")), _html_label(entry.rsplit(".", 1)[-1]), "entry",
            f"{entry}\n{location(model.get('file'), model.get('line'))}",
            url=(models_href.format(page=page_name(entry)) if models_href else None),
        )
        previous, write_key = entry_key, None
        hop_keys: list[str] = []
        for index, hop in enumerate(chain):
            kind = hop.get("kind") or "unresolved"
            qualname = hop.get("qualname") or f"?{entry}:{index}"
            key = ("unresolved:" + entry + ":" + str(index)) if kind == "unresolved" else qualname
            label = _hop_label(hop, kind)
            add_node(
                key, module_of_file(hop.get("file") or model.get("file")), label, kind,
                f"{qualname}\n{location(hop.get('file'), hop.get('line'))}", bad=index == bad_index,
            )
            if kind == "setter":
                setters_by_protocol.setdefault(protocol, set()).add(key)
            source = write_key if kind == "read" and write_key else previous
            caller = _calling_hop(chain, index)
            if kind == "delegate" and caller is not None:
                source = hop_keys[caller]
            hop_keys.append(key)
            add_edge(source, key, hop.get("resolved_by") or "", protocol, bad=index == bad_index,
                     no_ids=hop.get("passes_ids") is False)
            if kind == "write":
                write_key = key
            elif kind in ("setter", "delegate"):
                previous, write_key = key, None

    # The runner calls the setter on a receiver known only at run time: draw
    # one dispatch node per protocol.  Its edges to every setter it can reach
    # (dozens) would cross the whole picture, so the count goes in its label.
    traced = Counter(m.get("protocol") for m in scan.get("models") or [] if m.get("chain"))
    for site in scan.get("call_sites") or []:
        protocol = site.get("protocol") or "?"
        caller = site.get("caller") or "?"
        add_node("runner:" + caller, module_of_file(site.get("file")), _html_label(*short_name(caller).rsplit(".", 1)), "runner",
                 f"{caller}\n{location(site.get('file'), site.get('line'))}")
        dispatch = "dispatch:" + protocol
        methods = Counter(key.rsplit(".", 1)[-1] for key in setters_by_protocol.get(protocol, ()))
        method = methods.most_common(1)[0][0] if methods else "<setter>"
        add_node(dispatch, "(run time)",
                 _html_label(f"model.{method}(ids)", f"{protocol}: any of {traced.get(protocol, 0)} traced entry classes"),
                 "runner", f"{protocol}: the receiver is the loaded model object, known only at run time")
        add_edge("runner:" + caller, dispatch, "passes ids" if site.get("passes_ids") else "NO IDS", protocol,
                 no_ids=site.get("passes_ids") is False)

    graph = _base_graph("callgraph")
    graph.set("newrank", "true")
    graph.set("concentrate", "true")
    graph.set("ranksep", "0.6")
    clusters: dict[str, pydot.Cluster] = {}
    for module in sorted({record["module"] for record in nodes.values()}):
        cluster = pydot.Cluster(
            "m_" + re.sub(r"\W", "_", module), label=_text(module), style="rounded,filled",
            fillcolor="#f8f9fa", color="#dadce0", fontcolor="#5f6368", fontsize="10",
            tooltip=_text(module),
        )
        clusters[module] = cluster
        graph.add_subgraph(cluster)
    for key in sorted(nodes):
        record = nodes[key]
        node = pydot.Node(_node_id(key), label=record["label"],
                          tooltip=_text("\n".join(sorted(record["tips"]))))
        _style_node(node, record["kind"], record["bad"])
        if record["url"]:
            node.set("URL", _text(record["url"]))
        clusters[record["module"]].add_node(node)
    for (source, target) in sorted(edges):
        record = edges[(source, target)]
        label = "; ".join(sorted(record["labels"]))
        edge = pydot.Edge(_node_id(source), _node_id(target),
                          tooltip=_text(f"{', '.join(sorted(record['protocols']))}: {label}" if label else ", ".join(sorted(record["protocols"]))))
        if record["no_ids"]:
            edge.set("color", ORANGE)
            edge.set("style", "dashed")
        if record["bad"]:
            edge.set("color", RED)
            edge.set("penwidth", "1.8")
        graph.add_edge(edge)
    _legend(graph, with_runner=True)
    return graph


def page_name(entry: str) -> str:
    """File name of an entry class's page (qualnames are already file-safe; be sure)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", entry or "unknown") + ".html"


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


def render(dot: pydot.Dot, fmt: str, path: Path | str) -> dict:
    """Write ``path`` with suffix .dot always, and ``path`` in ``fmt`` when Graphviz is there.

    Returns {"dot": Path, "picture": Path | None, "message": str}; never raises
    for a missing or failing Graphviz (the message says what happened).
    """
    path = Path(path)
    fmt = fmt.lower()
    if fmt not in ("dot", "svg", "png"):
        raise ValueError(f"unknown picture format {fmt!r} (dot, svg or png)")
    path.parent.mkdir(parents=True, exist_ok=True)
    dot_path = path if fmt == "dot" else path.with_suffix(".dot")
    source = dot.to_string()
    dot_path.write_text(source, encoding="utf-8")
    if fmt == "dot":
        return {"dot": dot_path, "picture": None, "message": ""}
    if not graphviz_available():
        return {"dot": dot_path, "picture": None, "message": NO_GRAPHVIZ}
    output, message = _run_dot(source, fmt)
    if output is None:
        return {"dot": dot_path, "picture": None, "message": message}
    if fmt == "svg":
        output = add_svg_titles(output.decode("utf-8", "replace")).encode("utf-8")
    path.write_bytes(output)
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
