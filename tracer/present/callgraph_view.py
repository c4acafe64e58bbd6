"""Views of the whole call graph (`graph --all`): a readable neighbourhood around named
functions (``--from NAME --depth N``), GraphML (networkx), and a Graphviz picture of a
neighbourhood (pydot; the whole graph of a big tree is no picture anyone reads)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx
import pydot

# Edge colour per kind; every proven call is drawn solid (implicit ones dotted), so that a dashed
# line means one thing: a call no value proves (its receiver rests on a seed, ``proof``).
EDGE_STYLE = {
    "call": ("#3c4043", "solid"),
    "constructor": ("#1a73e8", "solid"),
    "super": ("#188038", "solid"),
    "decorator": ("#e37400", "dotted"),
    "callback": ("#a142f4", "solid"),
    "implicit": ("#80868b", "dotted"),
}
ASSUMED_COLOUR = "#d93025"
# why an edge is assumed, in words (the solver's reasons: tracer.callgraph.seeds)
ASSUMED_WHY = {
    "entry-classes": "the runner's receiver taken to be one of the entry classes (built from a registry at run time)",
    "attributes": "a parameter no call fills, taken to be a class having the attributes read on it",
}


def assumed_edges(graph: nx.DiGraph) -> dict[str, int]:
    """The edges no value proves, counted by why (their ``proof``; "values" or none: proven)."""
    counts: dict[str, int] = {}
    for _, _, proof in graph.edges(data="proof"):
        if proof and proof != "values":
            counts[proof] = counts.get(proof, 0) + 1
    return dict(sorted(counts.items()))


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
    """GraphML (networkx's writer): nodes by full name, each edge with its ``kind`` and ``proof``."""
    clean = nx.DiGraph()
    clean.add_nodes_from(sorted(graph.nodes))
    for u, v in sorted(graph.edges):
        clean.add_edge(u, v, kind=graph.edges[u, v].get("kind", "call"), proof=graph.edges[u, v].get("proof") or "values")
    return "\n".join(nx.generate_graphml(clean)) + "\n"


def call_graph_dot(graph: nx.DiGraph) -> pydot.Dot:
    """A picture of a (small) call graph, readable at a glance: one box per function named
    ``Class.method``, boxed by module (the module's name on its box); the capture path first
    (the modules calling a start, then the starts' modules in call order) and drawn bold; a call
    no value proves dashed red and counted in the legend; start nodes highlighted."""
    # concentrate: the runner's fan-out into tens of setters is one trunk, not tens of crossing lines
    dot = pydot.Dot("callgraph", graph_type="digraph", rankdir="LR", fontname="Helvetica", newrank="true", concentrate="true",
                    nodesep="0.15", ranksep="0.6", labeljust="l", labelloc="t")
    dot.set_node_defaults(shape="box", style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize="10")
    dot.set_edge_defaults(fontname="Helvetica", fontsize="9")
    ids = {n: f"n{i}" for i, n in enumerate(sorted(graph.nodes))}
    starts = {n for n in graph if graph.nodes[n].get("start")}
    modules: dict[str, list[str]] = {}
    for n in sorted(graph.nodes):
        modules.setdefault(graph.nodes[n].get("module") or module_of(graph, n), []).append(n)
    for rank, module in enumerate(_path_order(graph, modules, starts)):
        members = modules[module]
        on_path = any(n in starts for n in members)
        cluster = pydot.Cluster(f"m{rank}", label=_quote(module or "(top level)"), fontname="Helvetica", fontsize="10",
                                fontcolor="#5f6368", style="rounded,filled",
                                fillcolor="#f1f6fe" if on_path else "#f8f9fa", color="#a8c7fa" if on_path else "#dadce0")
        for n in members:
            short = n[len(module) + 1:] if module and n.startswith(module + ".") else n
            attrs: dict[str, Any] = {"label": _quote(short), "tooltip": _quote(n)}
            if n in starts:
                attrs.update(fillcolor="#e8f0fe", color="#1a73e8", penwidth="2")
            cluster.add_node(pydot.Node(ids[n], **attrs))
        dot.add_subgraph(cluster)  # type: ignore[arg-type]  # a Cluster is a Subgraph (the stubs say otherwise)
    for u, v in sorted(graph.edges, key=lambda e: (e[1] not in starts, e)):
        kind = graph.edges[u, v].get("kind", "call")
        proof = graph.edges[u, v].get("proof") or "values"
        colour, style = EDGE_STYLE.get(kind, EDGE_STYLE["call"])
        style_of: dict[str, Any] = {"color": colour, "style": style}
        if proof != "values":
            # no label: a fan-out of tens of them is the runner's (the key says what dashed means)
            style_of.update(color=ASSUMED_COLOUR, style="dashed", tooltip=_quote(f"assumed: {ASSUMED_WHY.get(proof, proof)}"))
        elif kind != "call":
            style_of.update(label=_quote(kind), fontcolor=colour)
        if v in starts:  # the capture path: a call of a capture setter
            style_of.update(penwidth="2")
        dot.add_edge(pydot.Edge(ids[u], ids[v], **style_of))
    dot.set("label", _quote(legend(graph)))
    dot.set("fontsize", "16")
    return dot


def legend(graph: nx.DiGraph) -> str:
    """The picture's key: what solid, dashed and bold mean, with the counts."""
    assumed = assumed_edges(graph)
    total = graph.number_of_edges()
    lines = [f"{len(graph)} functions, {total} calls: solid = proven by values ({total - sum(assumed.values())})"]
    for why, count in assumed.items():
        lines.append(f"dashed red = assumed ({count}): {ASSUMED_WHY.get(why, why)}")
    lines.append("bold = a call of a capture setter (highlighted boxes); boxes grouped by module, the capture path first")
    return "\n".join(lines)


def _path_order(graph: nx.DiGraph, modules: dict[str, list[str]], starts: set[str]) -> list[str]:
    """Modules in reading order: those calling a start from outside the starts (the runner), then
    the starts' modules by how many setter calls deep they are from there, then the rest by name,
    modules of lone functions (no call in or out) last."""
    depth: dict[str, int] = {}
    frontier = {n for n in starts if not any(p in starts for p in graph.predecessors(n))} or set(starts)
    level = 0
    while frontier:
        for n in frontier:
            depth.setdefault(n, level)
        level += 1
        frontier = {m for n in frontier for m in graph.successors(n) if m in starts and m not in depth}
    callers = {u for u, v in graph.edges if v in starts and u not in starts}

    def key(module: str) -> tuple[int, int, str]:
        members = modules[module]
        if any(n in callers for n in members):
            return (0, 0, module)
        if not any(graph.degree(n) for n in members):  # a setter nothing here calls or is called by: last
            return (3, 0, module)
        found = [depth[n] for n in members if n in depth]
        return (1, min(found), module) if found else (2, 0, module)
    return sorted(modules, key=key)


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
