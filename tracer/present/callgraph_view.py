"""Views of the whole call graph (`graph --all`): a readable neighbourhood around named
functions (``--from NAME --depth N``), GraphML (networkx), and a Graphviz picture of a
neighbourhood (pydot; the whole graph of a big tree is no picture anyone reads)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx
import pydot

# Edge look per kind: (colour, style).
EDGE_STYLE = {
    "call": ("#3c4043", "solid"),
    "constructor": ("#1a73e8", "solid"),
    "super": ("#188038", "dashed"),
    "decorator": ("#e37400", "dotted"),
    "callback": ("#a142f4", "dashed"),
    "implicit": ("#80868b", "dotted"),
}


def start_nodes(graph: nx.DiGraph, name: str) -> list[str]:
    """The nodes ``--from NAME`` means: the node of that full name; else every node whose
    name ends with ``.NAME`` (``ModelRunner.initialize``, ``set_eagle3_layers_to_capture``);
    else, for a class (or module) name, every function defined in it."""
    if name in graph:
        return [name]
    suffix = [n for n in graph if n.endswith("." + name)]
    if suffix:
        return sorted(suffix)
    inside = [n for n in graph if n.startswith(name + ".") or f".{name}." in n]
    return sorted(inside)


def neighbourhood(graph: nx.DiGraph, starts: Iterable[str], depth: int, callers: bool = False) -> nx.DiGraph:
    """The subgraph of what ``starts`` call within ``depth`` calls (with ``callers``: also
    what calls them within ``depth``), every edge between the kept nodes with its kind."""
    starts = [s for s in starts if s in graph]
    kept = set(starts)
    for neighbours in ([graph.successors] + ([graph.predecessors] if callers else [])):
        frontier = set(starts)
        for _ in range(max(0, depth)):
            frontier = {m for n in frontier for m in neighbours(n)} - kept
            if not frontier:
                break
            kept |= frontier
    sub = graph.subgraph(kept).copy()
    for n in sub:
        sub.nodes[n]["module"] = module_of(graph, n)
    for s in starts:
        sub.nodes[s]["start"] = True
    return sub


def graph_to_graphml(graph: nx.DiGraph) -> str:
    """GraphML (networkx's writer): nodes by full name, each edge with its ``kind``."""
    clean = nx.DiGraph()
    clean.add_nodes_from(sorted(graph.nodes))
    for u, v in sorted(graph.edges):
        clean.add_edge(u, v, kind=graph.edges[u, v].get("kind", "call"))
    return "\n".join(nx.generate_graphml(clean)) + "\n"


def call_graph_dot(graph: nx.DiGraph) -> pydot.Dot:
    """A picture of a (small) call graph: one box per function, named ``Class.method`` with
    its module under it, start nodes highlighted, edges coloured and labelled by kind."""
    dot = pydot.Dot("callgraph", graph_type="digraph", rankdir="LR", fontname="Helvetica")
    dot.set_node_defaults(shape="box", style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize="10")
    dot.set_edge_defaults(fontname="Helvetica", fontsize="9")
    ids = {n: f"n{i}" for i, n in enumerate(sorted(graph.nodes))}
    for n in sorted(graph.nodes):
        module = graph.nodes[n].get("module") or module_of(graph, n)
        short = n[len(module) + 1:] if module and n.startswith(module + ".") else n
        label = short + (f"\n{module}" if module else "")
        attrs: dict[str, Any] = {"label": _quote(label), "tooltip": _quote(n)}
        if graph.nodes[n].get("start"):
            attrs.update(fillcolor="#e8f0fe", color="#1a73e8", penwidth="2")
        dot.add_node(pydot.Node(ids[n], **attrs))
    for u, v in sorted(graph.edges):
        kind = graph.edges[u, v].get("kind", "call")
        colour, style = EDGE_STYLE.get(kind, EDGE_STYLE["call"])
        style_of: dict[str, Any] = {"color": colour, "style": style}
        if kind != "call":
            style_of.update(label=_quote(kind), fontcolor=colour)
        dot.add_edge(pydot.Edge(ids[u], ids[v], **style_of))
    return dot


def module_of(graph: nx.DiGraph, name: str) -> str:
    """The module a node is defined in: the longest proper prefix of its name that is a module
    body node of ``graph`` (a module body is its own module)."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:i]) in graph:
            return ".".join(parts[:i])
    return name if "." not in name else parts[0]


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
