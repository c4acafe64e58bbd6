"""The differential check behind tests/test_binder.py: every hop of every scan chain must
be a fact of the call graph (``graph --all``'s solver), binding the same methods.

* a ``delegate`` hop: the graph has an edge from the method holding the call (the hop
  before it) to the method the scan says runs;
* a runner call site: the graph has an edge from its caller to a setter of the protocol;
* a ``read`` hop: the graph reaches the reading method from the forward that runs for the
  entry class (a model call runs the pack's ``module_call`` method in both engines).

A disagreement is a string saying which hop and what each engine answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import networkx as nx

from tracer.analysis.pipeline import summary_cache
from tracer.api import scan_to_json
from tracer.callgraph.build import whole_call_graph
from tracer.callgraph.focus import focused_call_graph
from tracer.callgraph.registry import registry_rules
from tracer.config.packs import load_protocols
from tracer.model.protocol import Protocol
from tracer.resolve.resolver import ClassRef, Resolver
from tracer.resolve.tree import open_project


def graph_of(root: Path, packs: list[Protocol], cache_dir: Path, focus: bool = False) -> nx.DiGraph:
    seeds = {p.setter: p.entry_variable for p in packs
             if p.entry_kind == "module-variable" and p.entry_variable and p.setter}
    calls = tuple(sorted({p.module_call for p in packs if p.module_call}))
    # as `graph --all` and the report seed: only in the packs' runner modules (tracer/cli/graph.py)
    seed_in = tuple(sorted({m for p in packs if p.entry_kind == "module-variable" and p.entry_variable
                            and p.setter for m in (p.runner_modules or ())}))
    cache = summary_cache(str(cache_dir), True)
    rules = registry_rules(root, packs)
    if focus:
        words = sorted({w for p in packs for w in (p.setter, p.state_attribute, p.entry_variable,
                                                     *p.capability_bases, *p.delegate_methods) if w})
        graph, _ = focused_call_graph(root, cache, words, entry_seeds=seeds, module_calls=calls,
                                      seed_modules=seed_in, registries=rules)
    else:
        graph, _ = whole_call_graph(root, cache, entry_seeds=seeds, module_calls=calls, seed_modules=seed_in,
                                    registries=rules)
    return graph


def disagreements(scan: dict[str, Any], graph: nx.DiGraph, packs: list[Protocol], resolver: Resolver,
                  checked: dict[str, int] | None = None) -> list[str]:
    """What the call graph does not bind as the scan does; ``checked`` counts the hops compared."""
    by_name = {p.name: p for p in packs}
    out: list[str] = []
    checked = {} if checked is None else checked
    for kind in ("delegate", "read", "call_site"):
        checked.setdefault(kind, 0)
    for model in scan["models"]:
        if model["verdict"] not in ("ok", "broken") or model.get("draft"):
            continue
        chain = model["chain"]
        for before, hop in zip(chain, chain[1:]):
            if hop["kind"] == "delegate" and before["kind"] in ("setter", "delegate"):
                checked["delegate"] += 1
                if not graph.has_edge(before["qualname"], hop["qualname"]):
                    out.append(f"{model['entry']} [{model['protocol']}]: the scan's hop {before['qualname']} -> "
                               f"{hop['qualname']} (line {hop.get('call_line')}) is no edge of the call graph "
                               f"(it has: {sorted(graph.successors(before['qualname'])) if before['qualname'] in graph else 'no such node'})")
        proto = by_name.get(model["protocol"])
        reads = [h for h in chain if h["kind"] == "read"]
        if proto is None or not reads or model["verdict"] != "ok":
            continue
        starts = _forwards(resolver, _bound_entry(model), proto.forward_methods)
        for read in reads:
            checked["read"] += 1
            if read["qualname"] not in graph:
                out.append(f"{model['entry']} [{model['protocol']}]: the scan's reader {read['qualname']} is no node of "
                           f"the call graph")
            elif starts and starts[0] in graph and not nx.has_path(graph, starts[0], read["qualname"]):
                out.append(f"{model['entry']} [{model['protocol']}]: the scan's reader {read['qualname']} is not "
                           f"reached in the call graph from {starts[0]}")
            elif not starts or starts[0] not in graph:
                out.append(f"{model['entry']} [{model['protocol']}]: the call graph has no forward of the entry class")
    setters = {p.setter for p in packs if p.setter}
    for site in scan["call_sites"]:
        checked["call_site"] += 1
        caller = site["caller"]
        if caller not in graph or not any(s.rpartition(".")[2] in setters for s in graph.successors(caller)):
            out.append(f"runner call site {caller} ({site['file']}:{site['line']}): the call graph binds no setter "
                       f"from it")
    return out


def _bound_entry(model: dict[str, Any]) -> str:
    """The class the chain was traced on: a registered name bound on platform branches (a
    re-export under ``if current_platform...``) is the default branch's class."""
    return next((alt["entry"] for alt in model.get("alternatives", ()) if alt.get("default")), model["entry"])


def _forwards(resolver: Resolver, entry: str, names: tuple[str, ...]) -> list[str]:
    """The forward that runs for ``entry`` (the one C3 MRO: tracer.bind.mro)."""
    module, _, qualname = entry.rpartition(".")
    ref = resolver.resolve_class(module, qualname)  # a registered name may be an import (`X as Alias`)
    for name in names:
        found = resolver.find_method(ref if isinstance(ref, ClassRef) else ClassRef(module, qualname), name)
        if found is not None:
            return [f"{found[0].fullname}.{name}"]
    return []


def check_tree(root: Path, cache_dir: Path, protocols: list[str] | None = None, focus: bool = False,
               checked: dict[str, int] | None = None) -> list[str]:
    packs = load_protocols(protocols)
    scan = scan_to_json(root, protocols, cache_dir=cache_dir)
    active = [p for p in packs if p.name in scan["protocols"]]
    _, resolver = open_project(root, active, cache_dir)
    return disagreements(scan, graph_of(root, active, cache_dir, focus), active, resolver, checked)
