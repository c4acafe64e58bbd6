"""`tracer graph --all` written straight from the solved edges, without networkx: the same
bytes as the networkx path (:func:`tracer.callgraph.build.graph_of` then
:func:`tracer.present.graphs.graph_json_text`, :func:`~tracer.present.graphs.graph_to_dot` or
:func:`tracer.present.callgraph_view.graph_to_graphml`), which tests/test_callgraph_warm.py
compares on several trees. A warm run prints a stored document and imports none of networkx,
pydot, libcst or jedi (~0.3 s of imports alone).

The graph is kept the way a DiGraph keeps it (nodes in insertion order, each node's successors
in edge insertion order, a repeated edge's attributes the last ones), so that every walk below
visits what networkx's would, in its order."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.etree.ElementTree import _escape_attrib, _escape_cdata  # type: ignore[attr-defined]

from tracer.callgraph.store import document_key

if TYPE_CHECKING:
    from tracer.callgraph.registry import RegistryRule
    from tracer.index.cache import SummaryCache

Adjacency = dict[str, dict[str, tuple[str, str]]]  # u -> v -> (kind, proof)


def adjacency(nodes: Iterable[str], edges: Iterable[tuple[str, str, str]], call_stats: dict[str, Any],
              short: Callable[[str], str] = str) -> Adjacency:
    """What :func:`tracer.callgraph.build.graph_of` builds, as plain dicts."""
    assumed = {(u, v): why for u, v, why in call_stats.get("edges_assumed", ())}
    names = {n: short(n) for n in nodes}
    adj: Adjacency = {}
    for name in names.values():
        adj.setdefault(name, {})
    for u, v, kind in edges:
        su, sv = names.get(u) or short(u), names.get(v) or short(v)
        adj.setdefault(su, {})
        adj.setdefault(sv, {})
        adj[su][sv] = (kind, assumed.get((u, v), "values"))
    return adj


def json_body(adj: Adjacency) -> dict[str, Any]:
    """:func:`tracer.present.graphs.graph_to_json` less its ``stats``."""
    data: dict[str, Any] = {"nodes": sorted(adj), "edges": sorted([u, v] for u, succ in adj.items() for v in succ)}
    kinds = {f"{u}->{v}": kind for u, succ in adj.items() for v, (kind, _) in succ.items() if kind}
    if kinds:
        data["edge_kinds"] = dict(sorted(kinds.items()))
    proofs = {f"{u}->{v}": proof for u, succ in adj.items() for v, (_, proof) in succ.items() if proof}
    if proofs:
        data["edge_provenance"] = dict(sorted(proofs.items()))
    return data


def json_head(adj: Adjacency) -> str:
    """The JSON document up to where its ``stats`` go (kept in the cache: the stats change each run)."""
    text = json.dumps(json_body(adj), indent=1)
    assert text.endswith("\n}")
    return text[:-2]


def json_with_stats(head: str, stats: dict[str, Any] | None) -> str:
    """The document :func:`tracer.present.graphs.graph_json_text` writes: ``head`` then ``stats``."""
    if stats is None:
        return head + "\n}\n"
    tail = json.dumps({"stats": stats}, indent=1)  # "stats" one level in, as in the whole document
    return head + "," + tail[1:] + "\n"


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dot_text(adj: Adjacency) -> str:
    """:func:`tracer.present.graphs.graph_to_dot`."""
    lines = ["digraph tracer {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica", fontsize=10];']
    for node in sorted(adj):
        lines.append(f"  {_quote(node)};")
    for u, v in sorted((u, v) for u, succ in adj.items() for v in succ):
        kind, proof = adj[u][v]
        proof = proof or "values"
        attrs = ([f"label={_quote(kind)}"] if kind else []) + (
            [f"style=dashed, proof={_quote(proof)}"] if proof != "values" else [])
        lines.append(f"  {_quote(u)} -> {_quote(v)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


_GRAPHML_HEAD = ('<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
                 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
                 'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
                 'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">')


def graphml_text(adj: Adjacency) -> str:
    """:func:`tracer.present.callgraph_view.graph_to_graphml` (networkx's GraphML writer: its keys
    in reverse order of first use, its two-space indentation, ElementTree's escaping)."""
    nodes = sorted(adj)
    edges = sorted((u, v) for u, succ in adj.items() for v in succ)
    lines = [_GRAPHML_HEAD]
    if edges:
        lines += ['  <key id="d1" for="edge" attr.name="proof" attr.type="string" />',
                  '  <key id="d0" for="edge" attr.name="kind" attr.type="string" />']
    if not nodes:
        lines += ['  <graph edgedefault="directed" />', "</graphml>"]
        return "\n".join(lines) + "\n"
    lines.append('  <graph edgedefault="directed">')
    lines += [f'    <node id="{_escape_attrib(n)}" />' for n in nodes]
    for u, v in edges:
        kind, proof = adj[u][v]
        lines += [f'    <edge source="{_escape_attrib(u)}" target="{_escape_attrib(v)}">',
                  _data("d0", kind), _data("d1", proof or "values"),
                  "    </edge>"]
    lines += ["  </graph>", "</graphml>"]
    return "\n".join(lines) + "\n"


def _data(key: str, text: str) -> str:
    return f'      <data key="{key}">{_escape_cdata(text)}</data>' if text else f'      <data key="{key}" />'


def document(adj: Adjacency, fmt: str) -> str:
    """The document of ``fmt`` (json: its head, :func:`json_with_stats` adds the stats)."""
    if fmt == "dot":
        return dot_text(adj)
    if fmt == "graphml":
        return graphml_text(adj)
    return json_head(adj)


DOCUMENT_SHAPE = "graph-doc1"


def _writer_fingerprint() -> str:
    """This writer's own code is part of a stored document's key: a changed writer never prints an old one."""
    try:
        return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    except OSError:
        return "unread"


def whole_call_document(path: str | Path, cache: SummaryCache, fmt: str, jobs: int = 0,
                        progress: Callable[[str], None] | None = None,
                        entry_seeds: dict[str, str] | None = None, module_calls: tuple[str, ...] = (),
                        seed_modules: tuple[str, ...] = (), registries: tuple[RegistryRule, ...] = (),
                        ) -> tuple[str, dict[str, Any], int, int]:
    """(the document of ``fmt`` "json", "dot" or "graphml", the stats, nodes, edges) of
    `tracer graph --all`: the same bytes as the networkx path. The document is kept in the cache
    under the tree's answer key, the format and this writer's code: a warm run with every file
    unchanged reads and hashes the files and prints it (no answer decoded, no graph built): sglang
    0.5.23 srt, warm, 1.53 CPU-s and 230 MiB before, 0.56-0.60 CPU-s and 162 MiB with it."""
    from tracer.callgraph.build import Tree, public_stats, tree_answer

    tree = Tree(path, cache, entry_seeds, module_calls, seed_modules, registries)
    key = document_key(tree.key, fmt, _writer_fingerprint())
    stored = tree.store.load_value(key)
    if (isinstance(stored, tuple) and len(stored) == 6 and stored[0] == DOCUMENT_SHAPE
            and isinstance(stored[1], str) and isinstance(stored[2], dict)
            and all(isinstance(x, int) for x in stored[3:])):
        _, head, public, ir_errors, n_nodes, n_edges = stored
        counts = tree.cached_counts()
        tree.datas.clear()
        tree.parsed = time.perf_counter()
    else:
        nodes, edges, call_stats, ir_errors, counts = tree_answer(tree, jobs, progress, entry_seeds, module_calls,
                                                                  registries)
        adj = adjacency(nodes, edges, call_stats, tree.short)
        del nodes, edges
        head, public = document(adj, fmt), public_stats(call_stats)
        n_nodes, n_edges = len(adj), sum(len(succ) for succ in adj.values())
        tree.store.store_value(key, (DOCUMENT_SHAPE, head, public, ir_errors, n_nodes, n_edges))
    stats = tree.stats(counts, ir_errors, public)
    return (json_with_stats(head, stats) if fmt == "json" else head), stats, n_nodes, n_edges
