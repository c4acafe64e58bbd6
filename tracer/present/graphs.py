"""The protocol graph: one networkx model of every traced chain, drawn by render.py,
exported by `tracer graph` (JSON, DOT) and pictured in the report.

Nodes are fully qualified names (entry classes, setter and delegate methods,
``Owner.state_attribute`` writes, reader methods; ``runner:<caller>`` and
``dispatch:<protocol>`` for the runner's calls on the model object known only at
run time). Edges carry ``kind`` (has-setter, delegates, writes, reads, unresolved,
calls), the ways they were resolved, the protocols, and whether they are broken or
drop the ids.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import networkx as nx

from tracer.model.findings import Finding
from tracer.model.results import Hop, ModelResult, ScanResult


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


def page_name(entry: str) -> str:
    """File name of an entry class's page (qualnames are already file-safe; be sure)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", entry or "unknown") + ".html"


def finding_entries(finding: Finding) -> list[str]:
    """The entry classes a finding is about (none: a runner finding)."""
    if finding.entries:
        return [e for e in finding.entries if e]
    return [finding.entry] if finding.entry else []


def findings_of(result: ScanResult) -> dict[tuple[str, str], list[Finding]]:
    """(entry, protocol) -> the findings about it."""
    found: dict[tuple[str, str], list[Finding]] = {}
    for item in result.findings:
        for entry in finding_entries(item):
            found.setdefault((entry, item.protocol), []).append(item)
    return found


def hop_problem(model: ModelResult, findings: Sequence[Finding] = ()) -> int | None:
    """Index of the hop to draw red, or None when the chain is clean: an
    ``unresolved`` hop, else the hop an error (then a warning) of this model points
    at; a broken or unknown chain with no such hop breaks after its last hop."""
    chain = model.chain
    for index, hop in enumerate(chain):
        if hop.kind == "unresolved":
            return index
    if model.verdict not in ("broken", "unknown"):
        return None  # warnings on a working chain are listed, not drawn red
    for severities in (("error",), ("warning",)):
        spots = {(f.file, f.line) for f in findings if f.severity in severities}
        for index, hop in enumerate(chain):
            if (hop.file, hop.line) in spots or (hop.call_file, hop.call_line) in spots:
                return index
    return len(chain) - 1 if chain else None


def calling_hop(chain: Sequence[Hop], index: int) -> int | None:
    """The earlier setter/delegate hop whose body holds this hop's call line.

    The chain is flat, so a setter that delegates twice (one call per branch)
    lists both delegations one after the other; the call line says which method
    really makes each call. None when the call line says nothing.
    """
    hop = chain[index]
    if not hop.call_file or not hop.call_line:
        return None
    best = None
    for earlier in range(index):
        other = chain[earlier]
        if other.kind not in ("setter", "delegate") or other.file != hop.call_file:
            continue
        if other.line <= hop.call_line and (best is None or other.line >= chain[best].line):
            best = earlier
    return best


def hop_node(model: ModelResult, index: int) -> str:
    hop = model.chain[index]
    if hop.kind == "unresolved":
        return f"?{model.entry}:{index}:{hop.qualname}"
    return hop.qualname


def protocol_graph(result: ScanResult, models_href: str | None = None) -> nx.DiGraph:
    """Every traced chain (entry classes without a setter are left out: the support
    matrix lists them), and the runner's calls."""
    graph = nx.DiGraph()
    by_model = findings_of(result)

    def add_node(key: str, **attrs: Any) -> None:
        tip = attrs.pop("tip", "")
        bad = attrs.pop("bad", False)
        if key not in graph:
            graph.add_node(key, tips=set(), bad=False, **attrs)
        graph.nodes[key]["tips"].add(tip)
        graph.nodes[key]["bad"] = graph.nodes[key]["bad"] or bad

    def add_edge(source: str, target: str, kind: str, how: str, protocol: str, bad: bool = False,
                 no_ids: bool = False) -> None:
        if not graph.has_edge(source, target):
            graph.add_edge(source, target, kind=kind, hows=set(), protocols=set(), bad=False, no_ids=False)
        data = graph.edges[source, target]
        if how:
            data["hows"].add(how)
        data["protocols"].add(protocol)
        data["bad"] = data["bad"] or bad
        data["no_ids"] = data["no_ids"] or no_ids

    setters: dict[str, set[str]] = {}
    for model in result.models:
        if not model.chain:
            continue
        bad_index = hop_problem(model, by_model.get((model.entry, model.protocol), ()))
        add_node(model.entry, kind="entry", module=module_of_file(model.file), file=model.file, line=model.line,
                 tip=f"{model.entry}\n{location(model.file, model.line)}",
                 url=models_href.format(page=page_name(model.entry)) if models_href else None)
        previous, write = model.entry, None
        keys: list[str] = []
        for index, hop in enumerate(model.chain):
            key = hop_node(model, index)
            add_node(key, kind=hop.kind, module=module_of_file(hop.file or model.file), file=hop.file,
                     line=hop.line, qualname=hop.qualname, reason=hop.reason, bad=index == bad_index,
                     tip=f"{hop.qualname}\n{location(hop.file, hop.line)}")
            if hop.kind == "setter":
                setters.setdefault(model.protocol, set()).add(key)
            caller = calling_hop(model.chain, index)
            source = hop_source(model.chain, index, previous, write, keys, caller)
            keys.append(key)
            kind = {"setter": "has-setter", "delegate": "delegates", "write": "writes", "read": "reads"}.get(
                hop.kind, "unresolved")
            if kind == "reads":  # "the reader reads the state": reader -> state
                add_edge(key, source, kind, hop.resolved_by, model.protocol, bad=index == bad_index)
            else:
                add_edge(source, key, kind, hop.resolved_by, model.protocol, bad=index == bad_index,
                         no_ids=hop.passes_ids is False)
            if hop.kind == "write":
                write = key
            elif hop.kind in ("setter", "delegate"):
                previous, write = key, None

    # The runner calls the setter on a receiver known only at run time: one
    # dispatch node per protocol (edges to every setter would cross the picture).
    traced = Counter(m.protocol for m in result.models if m.chain)
    for site in result.call_sites:
        runner = "runner:" + site.caller
        add_node(runner, kind="runner", module=module_of_file(site.file), file=site.file, line=site.line,
                 qualname=site.caller, tip=f"{site.caller}\n{location(site.file, site.line)}")
        dispatch = "dispatch:" + site.protocol
        methods = Counter(key.rsplit(".", 1)[-1] for key in setters.get(site.protocol, ()))
        method = methods.most_common(1)[0][0] if methods else "<setter>"
        add_node(dispatch, kind="dispatch", module="(run time)", file="", line=0, qualname=f"model.{method}",
                 protocol=site.protocol, traced=traced.get(site.protocol, 0),
                 tip=f"{site.protocol}: the receiver is the loaded model object, known only at run time")
        add_edge(runner, dispatch, "calls", "passes ids" if site.passes_ids else "NO IDS", site.protocol,
                 no_ids=not site.passes_ids)
    return graph


def hop_source(chain: Sequence[Hop], index: int, previous: str, write: str | None, keys: list[str],
               caller: int | None) -> str:
    """The node a hop hangs off: writes and delegations off the setter that makes them,
    reads off the write they read."""
    hop = chain[index]
    if hop.kind == "read" and write:
        return write
    if hop.kind == "delegate" and caller is not None:
        return keys[caller]
    return previous


def graph_to_json(graph: nx.DiGraph, stats: dict[str, Any] | None = None) -> dict[str, Any]:
    nodes = sorted(graph.nodes)
    edges = sorted([u, v] for u, v in graph.edges)
    data: dict[str, Any] = {"nodes": nodes, "edges": edges}
    attrs = [(f"{u}->{v}", a) for u, v, a in graph.edges(data=True)]  # one walk, no lookup per edge
    kinds = {key: a["kind"] for key, a in attrs if a.get("kind")}
    if kinds:
        data["edge_kinds"] = dict(sorted(kinds.items()))
    # the call graph's edges (graph --all): how each is known, "values" (a value the solver followed
    # proves it) or why it is assumed ("entry-classes", "attributes": its receiver rests on a seed)
    proofs = {key: a["proof"] for key, a in attrs if a.get("proof")}
    if proofs:
        data["edge_provenance"] = dict(sorted(proofs.items()))
    if stats is not None:
        data["stats"] = stats
    return data


def graph_json_text(graph: nx.DiGraph, stats: dict[str, Any] | None = None) -> str:
    """`tracer graph --format json`."""
    return json.dumps(graph_to_json(graph, stats), indent=1) + "\n"


def graph_to_dot(graph: nx.DiGraph) -> str:
    """Plain DOT (no styling): for graphs too big to be pictures (``graph --all``)."""
    def quote(name: str) -> str:
        return '"' + name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = ["digraph tracer {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica", fontsize=10];']
    for node in sorted(graph.nodes):
        lines.append(f"  {quote(node)};")
    for u, v in sorted(graph.edges):
        kind = graph.edges[u, v].get("kind", "")
        proof = graph.edges[u, v].get("proof") or "values"
        attrs = ([f"label={quote(kind)}"] if kind else []) + ([f"style=dashed, proof={quote(proof)}"] if proof != "values" else [])
        lines.append(f"  {quote(u)} -> {quote(v)}" + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"
