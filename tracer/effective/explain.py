"""Effective layers: which hidden states the draft really receives.

Given one model's chain (its setter hops, the state write and the decoder loop
that reads it), the runner call sites, a target config and a draft config, this
module evaluates the real setter bodies hop by hop on the config values
(``tracer.interp.evaluate``), then the decoder loop, and says in plain words what
is captured on the eager path and in replayed CUDA graphs, with findings when
that differs from what the draft was trained on. Sources come from the scan's
own Project (sources.py); the protocol's facts from its pack.

Conventions: index ``i`` in ``layers_to_capture`` is the hidden state
*entering* layer ``i``, which is the output of layer ``i - 1``; index 0 is the
embedding output (reported as -1).
"""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from tracer.effective.argument_ids import explain_argument
from tracer.effective.config_ids import explain_config
from tracer.effective.configs import DraftConfig, TargetConfig
from tracer.effective.findings import Facts, effective_findings, known_list, plain
from tracer.effective.queries import bind_self_queries, capture_helpers
from tracer.effective.sources import ExplainError, FunctionSource, Sources
from tracer.effective.stages import stage_ranges
from tracer.interp.evaluate import (
    Obj,
    Unknown,
    captured_indices,
    contains_unknown,
    evaluate_function,
    is_unknown,
)
from tracer.model.protocol import Protocol
from tracer.model.results import CallSite, Hop, ModelResult

__all__ = ["ExplainError", "explain_model", "stage_ranges"]


@dataclass
class _Rank:
    rank: int
    start: int
    end: int
    is_first: bool
    is_last: bool


def _base_env(config: dict, rank: _Rank, pp: int, protocol: Protocol) -> dict:
    env = {"self.config": config, "self.start_layer": rank.start, "self.end_layer": rank.end, "os.environ": {}}
    for group in protocol.pp_group_expressions:
        env[f"{group}.is_last_rank"] = rank.is_last
        env[f"{group}.is_first_rank"] = rank.is_first
        env[f"{group}.rank_in_group"] = rank.rank
        env[f"{group}.world_size"] = pp
    return env


def _params(fn: FunctionSource) -> list:
    module = cst.parse_module(textwrap.dedent(fn.source))
    func = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    params = list(func.params.posonly_params) + list(func.params.params)
    return [p.name.value for p in params if p.name.value not in ("self", "cls")]


def _fmt(value: Any) -> str:
    if is_unknown(value):
        return f"unknown ({value.why})"
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _layer_objects(store: dict, prefix: str, num_layers: int | None, marker: str | None) -> dict:
    """``self.layers`` / ``self.model.layers`` as layer objects carrying the marks set so far
    (make_layers keeps the full length on every pipeline rank)."""
    out = {}
    for relative in ("self", "self.model"):
        base = prefix + relative[len("self"):]
        layers = []
        for i in range(num_layers or 0):
            attrs = []
            key = f"{base}.layers[{i}].{marker}" if marker else None
            if key and key in store:
                attrs.append((marker, store[key]))
            layers.append(Obj(f"layers[{i}]", attrs=tuple(attrs)))
        out[relative] = layers
    return out


def _run_chain(sources: Sources, hops: list[Hop], ids: Any, target: TargetConfig, rank: _Rank, pp: int,
               protocol: Protocol, store: dict, chain_hops: Sequence[Hop] = (), entry: str = "") -> dict:
    """Run the setter hops once (one runner call) on one rank; apply the writes
    to ``store`` (absolute paths from the top model object)."""
    steps: list = []
    unknowns: list = []
    early = raised = None
    state_write = None  # where the state was last written on this run (the branch taken, not the first write)
    # the ids go to the setter's first parameter, whatever its name (the runner passes them positionally)
    first = _params(sources.of_qualname(hops[0].qualname)) if hops else []
    args = {(first[0] if first else protocol.ids_parameter): copy.deepcopy(ids)}
    marker = protocol.state_markers[0] if protocol.state_markers else None
    prefix = "self"
    num_layers = target.num_hidden_layers
    for index, hop in enumerate(hops):
        fn = sources.of_qualname(hop.qualname)
        config = target.config_for(inner=index > 0)
        env = _base_env(config, rank, pp, protocol)
        next_hop = hops[index + 1] if index + 1 < len(hops) else None
        next_method = next_hop.qualname.rsplit(".", 1)[-1] if next_hop else None
        concrete = entry if index == 0 and entry else hop.qualname.rsplit(".", 1)[0]
        bind_self_queries(env, sources, fn.source, concrete, next_hop, chain_hops, protocol.state_attribute)
        layers = _layer_objects(store, prefix, num_layers, marker)
        env.setdefault("self.model.layers", layers["self.model"])
        env.setdefault("self.layers", layers["self"])
        # What this object already holds (earlier calls), relative to its own self.
        for path, value in store.items():
            if path.startswith(prefix + ".") and path[len(prefix):].count(".") >= 1:
                env.setdefault("self" + path[len(prefix):], value)
        outcome = evaluate_function(fn.source, args=args, env=env, first_line=fn.first_line)
        where = f"{hop.file}:{fn.first_line}"
        config_name = "the text config" if (index > 0 and target.is_nested) else "the top config"
        for note in outcome.unknowns:
            unknowns.append({"expr": note.expr, "file": hop.file, "line": note.line, "why": note.why})
        decided = "; ".join(
            f"line {b.line}: `{' '.join(b.condition.split())}` is {'unknown' if b.taken == 'unknown' else bool(b.value)}"
            for b in outcome.branches
        )
        shown_args = ", ".join(f"{k}={_fmt(v)}" for k, v in args.items())
        text = f"{fn.qualname} ({where}) called with {shown_args}, self.config = {config_name}"
        if decided:
            text += f"; {decided}"
        for path, value in ((p, v) for p, v in outcome.writes.items() if p.split(".", 1)[0] == "self"):
            absolute = prefix + path[len("self"):]
            store[absolute] = value
            if path.rsplit(".", 1)[-1] == protocol.state_attribute:
                store.pop(_INCOMPLETE, None)  # a complete overwrite of the state
        state_writes = {p: v for p, v in outcome.writes.items()
                        if p.rsplit(".", 1)[-1] == protocol.state_attribute and p.split(".", 1)[0] == "self"}
        for path, value in state_writes.items():
            text += f"; writes {path} = {_fmt(value)} (line {outcome.write_lines.get(path, '?')}){_transform(args, value, protocol)}"
            if outcome.write_lines.get(path):
                state_write = {"file": hop.file, "line": outcome.write_lines[path]}
        marks = sorted(p for p in outcome.writes if marker and p.endswith("." + marker))
        if marks:
            text += f"; marks {', '.join(marks)}"
        if outcome.returned_early:
            early = {"file": hop.file, "line": outcome.returned_early.line, "condition": outcome.returned_early.condition, "hop": fn.qualname}
            text += f"; returns early at line {outcome.returned_early.line} (`{outcome.returned_early.condition}`), so nothing is written on this rank"
            steps.append(text)
            break
        if outcome.raised:
            raised = {"file": hop.file, "line": outcome.raised.line, "source": outcome.raised.source, "hop": fn.qualname}
            text += f"; raises at line {outcome.raised.line}: {outcome.raised.source.splitlines()[0]}"
            steps.append(text)
            store[_INCOMPLETE] = f"{fn.qualname} ({where}) raises: {outcome.raised.source.splitlines()[0]}"
            break
        if not outcome.complete:
            why = outcome.stopped.why if outcome.stopped else "unknown"
            text += f"; evaluation stopped: {why}"
            steps.append(text)
            store[_INCOMPLETE] = f"{fn.qualname} ({where}): {why}"
            break
        if next_hop is None:
            steps.append(text)
            break
        calls = [c for c in outcome.calls if c.method == next_method and c.receiver
                 and (c.receiver == "self" or c.receiver.startswith("self."))]
        if not calls:
            text += f"; does not call {next_method} on this path"
            steps.append(text)
            break
        call = calls[-1]
        if len(calls) > 1:
            text += f" ({len(calls)} calls to {next_method}; following the last, line {call.line})"
        passed = call.args[0] if call.args else None
        text += f"; passes {_fmt(passed) if call.args else 'nothing'} to {call.receiver}.{next_method} (line {call.line}){_transform(args, passed, protocol)}"
        steps.append(text)
        next_fn = sources.of_qualname(next_hop.qualname)
        names = _params(next_fn)
        args = dict(zip(names, call.args, strict=False))
        args.update(dict(call.kwargs))
        prefix = prefix + call.receiver[len("self"):]
    return {"steps": steps, "unknowns": unknowns, "returned_early": early, "raised": raised, "state_write": state_write}


_INCOMPLETE = "<incomplete>"  # store key: an earlier run stopped, so the state is not known


def _transform(args: dict, value: Any, protocol: Protocol) -> str:
    """Plain words for what a hop did to the ids it received."""
    received = next(iter(args.values()), None) if args else None
    if not isinstance(value, list) or contains_unknown(value):
        return ""
    if received is None:
        return " (the fallback: no ids were given)"
    if not isinstance(received, (list, tuple)) or contains_unknown(received):
        return ""
    received = list(received)
    shift = protocol.id_shift
    if value == received:
        return " (ids kept as given, no shift)"
    if value == [i + shift for i in received]:
        return f" (each id +{shift})"
    return " (ids changed)"


def _state_owner_prefix(store: dict, attribute: str) -> str | None:
    owners = [p[: -len(attribute) - 1] for p in store if p.endswith("." + attribute)]
    return owners[-1] if owners else None


def _consumer_env(store: dict, owner: str | None, config: dict, rank: _Rank, pp: int, num_layers: int,
                  marker: str | None, protocol: Protocol) -> dict:
    env = _base_env(config, rank, pp, protocol)
    for expression in protocol.assume_false:
        env[expression] = False
    layers = []
    for i in range(num_layers):
        attrs = []
        if owner is not None and marker:
            key = f"{owner}.layers[{i}].{marker}"
            if key in store:
                attrs.append((marker, store[key]))
        layers.append(Obj(f"layers[{i}]", attrs=tuple(attrs), closed=True))
    env["self.layers"] = layers
    if owner is not None:
        for path, value in store.items():
            if path.startswith(owner + "."):
                env.setdefault("self" + path[len(owner):], value)
    return env


def _call_sequence(call_sites: Sequence[CallSite], protocol: str) -> list[dict]:
    sites = [c for c in call_sites if c.protocol == protocol]

    # Calls made before graph capture ran before those made after it; inside
    # each group the scan's order decides, and a call of unknown order goes last.
    def key(site: CallSite) -> tuple:
        order = site.order
        return (0 if site.before_graph_capture else 1, order is None, order if order is not None else 0)

    return [{"file": s.file, "line": s.line, "passes_ids": s.passes_ids, "caller": s.caller,
             "before_graph_capture": s.before_graph_capture, "order": s.order} for s in sorted(sites, key=key)]


def explain_model(
    sources: Sources,
    model: ModelResult,
    call_sites: Sequence[CallSite],
    target: TargetConfig,
    draft: DraftConfig,
    protocol: Protocol,
    pp: int = 1,
    origin: Protocol | None = None,
) -> dict:
    proto = protocol
    state_attr = proto.state_attribute
    marker = proto.state_markers[0] if proto.state_markers else None
    chain = list(model.chain)
    hops: list[Hop] = []
    for hop in chain:
        # The same method reached from two call lines is one hop (the calls are alternatives).
        if hop.kind in ("setter", "delegate") and all(h.qualname != hop.qualname for h in hops):
            hops.append(hop)
    reads = [h for h in chain if h.kind == "read"]
    unresolved = [h for h in chain if h.kind == "unresolved"]
    num_layers = target.num_hidden_layers
    findings: list = []
    unknowns: list = []
    notes: list = []
    result: dict = {
        "entry": model.entry,
        "requested_ids": list(draft.layer_ids) if draft.layer_ids is not None else None,
        "ids_key": draft.ids_key,
        "id_shift": protocol.id_shift,  # what an id means: 1 the output of layer i, 0 its input
        # the framework whose convention trained the draft (--draft-framework), and its id_shift
        "draft_convention": {"framework": origin.framework, "id_shift": origin.id_shift} if origin else None,
        "runner_ids": None,
        "num_hidden_layers": num_layers,
        "hidden_size": target.hidden_size,
        "pp": pp,
        "steps": [],
        "layers_to_capture": None,
        "captured_indices": None,
        "effective_layers": None,
        "graph_layers": None,
        "graph_layers_differ": False,
        "expected_aux": None,
        "ranks": [],
        "calls": [],
        "findings": findings,
        "unknowns": unknowns,
        "notes": notes,
    }
    if model.protocol != proto.name:
        unknowns.append({"expr": model.entry, "file": model.file, "line": model.line,
                         "why": f"explain was given {proto.name}; this chain is {model.protocol}"})
        return result
    if not hops:
        unknowns.append({"expr": model.entry, "file": model.file, "line": model.line,
                         "why": f"the chain has no setter hop (verdict {model.verdict})"})
        return result
    if proto.config_attribute:
        # The ids are written by a config builder, not passed by a runner call: run the builder
        # (config_ids.py); where its value is not known, say where the ids come from.
        if explain_config(sources, proto, chain, target, draft, result, origin):
            return result
        for hop in (h for h in chain if h.kind == "setter"):
            unknowns.append({"expr": hop.qualname, "file": hop.file, "line": hop.line,
                             "why": f"the config builder writes {proto.config_attribute} itself ({hop.resolved_by}); "
                                    "its value could not be evaluated"})
        notes.append(f"the ids reach the model as config.{proto.config_attribute}, written by the config builder: "
                     "no runner call passes the draft's ids")
        return result
    if proto.argument_parameter:
        # The ids travel in a metadata object the executor builds from its own settings (not the
        # draft's config.json): its defaulting method decides when none are configured.
        explain_argument(sources, proto, chain, target, draft, result)
        return result
    for hop in unresolved:
        unknowns.append({"expr": hop.qualname, "file": hop.file, "line": hop.line, "why": hop.reason or "unresolved hop"})

    # Which ids reach the setter: the keys the runner reads (the pack says which).
    runner_keys = list(proto.runner_ids_keys or proto.draft_ids_keys)
    runner_ids = list(draft.layer_ids) if draft.layer_ids is not None and draft.ids_key in runner_keys else None
    result["runner_ids"] = runner_ids
    if draft.layer_ids is not None and runner_ids is None:
        notes.append(
            f"the draft names ids under `{draft.ids_key}`, but the runner reads only {', '.join(f'`{k}`' for k in runner_keys)}; it calls the setter with None"
        )
    if draft.use_aux_hidden_state is False:
        notes.append("the draft sets eagle_config.use_aux_hidden_state = false")

    # Pipeline stages.
    if num_layers is None:
        unknowns.append({"expr": "num_hidden_layers", "file": str(target.path), "line": None,
                         "why": "the target config names no num_hidden_layers"})
        return result
    ranges, how = stage_ranges(sources, proto, num_layers, pp)
    if ranges is None:
        notes.append(f"pipeline stage ranges could not be computed: {how}")
        ranks = [_Rank(pp - 1, 0, num_layers, pp == 1, True)]
        ranges_known = False
    else:
        if pp > 1:
            notes.append(f"pipeline stages {', '.join(f'rank {r}: layers {s}..{e - 1}' for r, (s, e) in enumerate(ranges))} ({how})")
        ranks = [_Rank(r, s, e, r == 0, r == pp - 1) for r, (s, e) in enumerate(ranges)]
        ranges_known = True

    # The runner's calls, in start-up order.
    sequence = _call_sequence(call_sites, proto.name)
    assumed_sequence = not sequence
    unordered = [c for c in sequence if "order" in c and c.get("order") is None]
    if unordered:
        notes.append("start-up order unknown for " + ", ".join(f"{c.get('file')}:{c.get('line')}" for c in unordered)
                     + "; placed last among the calls on the same side of graph capture")
    if not sequence:
        notes.append("no runner call sites given: assumed one call with the draft's ids (the eager path)")
        sequence = [{"file": None, "line": None, "passes_ids": True, "before_graph_capture": False, "caller": "(assumed)"}]

    last_rank = ranks[-1]
    per_rank: dict = {}
    for rank in ranks:
        store: dict = {}
        graph_store: dict | None = None
        runs = []
        for site in sequence:
            passes = site.get("passes_ids")
            ids = runner_ids if passes else None
            if passes is None:
                unknowns.append({"expr": site.get("caller"), "file": site.get("file"), "line": site.get("line"), "why": "whether this call passes ids is unknown"})
            run = _run_chain(sources, hops, ids, target, rank, pp, proto, store, chain, model.entry)
            if passes is None:
                # Followed as a call without ids, but the state it leaves is not known.
                store[_INCOMPLETE] = f"whether the call at {site.get('file')}:{site.get('line')} passes ids is unknown"
            run["site"] = site
            run["ids"] = ids
            runs.append(run)
            if site.get("before_graph_capture"):
                graph_store = copy.deepcopy(store)
        per_rank[rank.rank] = {"rank": rank, "store": store, "graph_store": graph_store, "runs": runs}

    # Steps and unknowns are reported for the last rank, where the captured states are used.
    last = per_rank[last_rank.rank]
    seen_unknowns = set()
    for run in last["runs"]:
        site = run["site"]
        where = f"{site['file']}:{site['line']}" if site.get("file") else None
        if not site.get("passes_ids"):
            passed = "no ids"
        elif run["ids"] is None:
            passed = "the draft's ids, which the runner read as None"
        else:
            passed = f"ids {_fmt(run['ids'])}"
        label = (f"runner call at {where} ({site.get('caller', '?')}) passes {passed}" if where
                 else f"assumed runner call passes {passed}")
        if site.get("before_graph_capture"):
            label += ", before CUDA-graph capture"
        result["steps"].append(label)
        result["steps"].extend("  " + s for s in run["steps"])
        result["calls"].append({"file": site.get("file"), "line": site.get("line"), "passes_ids": site.get("passes_ids"),
                                "before_graph_capture": site.get("before_graph_capture"), "ids": run["ids"]})
        for u in run["unknowns"]:
            key = (u["expr"], u["line"], u["why"])
            if key not in seen_unknowns:
                seen_unknowns.add(key)
                unknowns.append(u)

    def capture_on(rank: _Rank, store: dict) -> dict:
        owner = _state_owner_prefix(store, state_attr)
        ltc = store.get(f"{owner}.{state_attr}") if owner else None
        out = {"owner": owner, "layers_to_capture": ltc, "captured": None, "visited": None, "result": None}
        if _INCOMPLETE in store:
            out["layers_to_capture"] = Unknown(state_attr, f"the setter chain could not be evaluated: {store[_INCOMPLETE]}")
            return out
        config = target.config_for(inner=True)
        env = _consumer_env(store, owner, config, rank, pp, num_layers, marker, proto)
        value = ltc if ltc is not None else []  # __init__ sets an empty list
        # The reader that holds the decoder loop (a chain may list the setter's own read first).
        candidates = [({"qualname": read.qualname, "file": read.file, "line": read.line},
                       sources.of_qualname(read.qualname)) for read in reversed(reads)]
        owner_class = write_hop.qualname.rsplit(".", 1)[0] if write_hop else None
        if owner_class:
            for forward in sources.forwards(owner_class):
                if any(fn.source == forward.source for _, fn in candidates):
                    continue
                candidates.append(({"qualname": forward.qualname, "file": forward.file, "line": forward.first_line,
                                    "found_by_name": True}, forward))
        helpers = capture_helpers(sources, reads, state_attr)
        for read, fn in candidates:
            if str(read["qualname"]).rsplit(".", 1)[-1] in helpers:
                continue
            result_ = captured_indices(fn.source, value, env, state_path=f"self.{state_attr}", first_line=fn.first_line,
                                       marker_attribute=marker, helpers=helpers)
            if result_.loop_line is not None:
                out.update(captured=list(result_.captured), visited=list(result_.visited), result=result_, read=read, fn=fn)
                break
        return out

    write_hop = next((h for h in chain if h.kind == "write"), None)
    eager = capture_on(last_rank, last["store"])
    if eager.get("read", {}).get("found_by_name"):
        notes.append(f"the scan traced no reader holding the decoder loop; used {eager['read']['qualname']} "
                     f"({eager['read']['file']}:{eager['read']['line']}), found from the MRO of {write_hop.qualname.rsplit('.', 1)[0] if write_hop else '?'}")
    graph = capture_on(last_rank, last["graph_store"]) if last["graph_store"] is not None else None
    cap = eager.get("result")
    result["layers_to_capture"] = plain(eager["layers_to_capture"])
    if cap is not None:
        for note in cap.unknowns:
            unknowns.append({"expr": note.expr, "file": eager["read"]["file"], "line": note.line, "why": note.why})
        if cap.complete:
            result["captured_indices"] = list(cap.captured)
            result["effective_layers"] = list(cap.captured_outputs)
        result["loop"] = {"file": eager["read"]["file"], "line": cap.loop_line, "source": cap.loop_source, "visited": [cap.visited[0], cap.visited[-1]] if cap.visited else [],
                          "after_layer": cap.after_layer}
    if assumed_sequence or any(s.get("before_graph_capture") is None for s in sequence):
        notes.append("the order of runner calls relative to CUDA-graph capture is not known: graph layers not computed")
    elif any(s.get("before_graph_capture") for s in sequence):
        if graph is not None and graph.get("result") is not None and graph["result"].complete:
            result["graph_layers"] = list(graph["result"].captured_outputs)
            result["graph_layers_to_capture"] = plain(graph["layers_to_capture"])
            result["graph_layers_differ"] = result["graph_layers"] != result["effective_layers"]
    else:
        notes.append("no runner call happens before CUDA-graph capture: graphs are captured with the initial empty list")
        result["graph_layers"] = []
        result["graph_layers_differ"] = result["effective_layers"] != []

    facts = Facts(
        proto=proto, entry=model.entry, draft=draft, target=target, pp=pp, hops=hops, write_hop=write_hop,
        sequence=sequence, runner_ids=runner_ids, ranks=ranks, ranges_known=ranges_known, ranges_how=how,
        per_rank=per_rank, loop_file=eager["read"]["file"] if cap is not None else None, cap=cap,
        layers_to_capture=known_list(eager["layers_to_capture"]), result=result, origin=origin,
    )
    findings.extend(effective_findings(facts, notes))
    if pp > 1 and not ranges_known:
        # The last stage's range is not known, so neither is what its loop visits.
        result["captured_indices"] = result["effective_layers"] = None
        unknowns.append({"expr": proto.pp_indices_function or "stage ranges", "file": None, "line": None, "why": how})

    result["ranks"] = [
        {"rank": r.rank, "layers": [r.start, r.end], "returned_early": bool(per_rank[r.rank]["runs"][-1]["returned_early"])}
        for r in ranks
    ]
    return result
