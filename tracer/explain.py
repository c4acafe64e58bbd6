"""Effective layers: which hidden states the draft really receives.

Given one model of the scan JSON (its chain of setter hops, the state write and
the decoder loop that reads it), the runner call sites, a target config and a
draft config, this module evaluates the real setter bodies hop by hop on the
config values (``tracer.evaluate``), then the decoder loop, and says in plain
words what is captured on the eager path and in replayed CUDA graphs, with
findings when that differs from what the draft was trained on.

Conventions: index ``i`` in ``layers_to_capture`` is the hidden state
*entering* layer ``i``, which is the output of layer ``i - 1``; index 0 is the
embedding output (reported as -1).
"""

from __future__ import annotations

import copy
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tracer.configs import DraftConfig, TargetConfig
from tracer.evaluate import (
    ABSENT,
    Obj,
    Unknown,
    captured_indices,
    contains_unknown,
    evaluate_function,
    is_unknown,
)

__all__ = [
    "ExplainError",
    "annotate_scan",
    "explain_command",
    "explain_model",
    "format_explanation",
    "locate_function",
    "pick_model",
    "stage_ranges",
]

# The protocol facts explain needs (rules/sglang-eagle3.toml); a caller may pass its own.
DEFAULT_PROTOCOL = {
    "name": "sglang-eagle3",
    "setter": "set_eagle3_layers_to_capture",
    "state_attribute": "layers_to_capture",
    "ids_parameter": "layer_ids",
    "id_shift": 1,
    "fallback": "[2, num_layers // 2, num_layers - 3]",
    # The keys SGLang's runner reads the ids from (spec_aux_hidden_state.py /
    # model_runner.py: eagle_config["eagle_aux_hidden_state_layer_ids"] under a
    # bare try/except). A top-level key is read only for the fc width.
    "runner_ids_keys": ["eagle_config.eagle_aux_hidden_state_layer_ids"],
    # Per-layer marker some models set instead of reading the list (qwen2_moe).
    "marker_attribute": "_is_layer_to_capture",
}
PP_INDICES_FILES = ("sglang/srt/distributed/utils.py", "python/sglang/srt/distributed/utils.py", "srt/distributed/utils.py")


class ExplainError(Exception):
    pass


# ------------------------------------------------------------ locating code


@dataclass(frozen=True)
class FunctionSource:
    file: Path
    name: str
    qualname: str  # Class.method inside the module
    source: str
    first_line: int
    last_line: int


# Bases that end a by-name class walk: they come from torch or the standard library.
_TERMINAL_BASES = {"Module", "object", "Generic", "ABC", "Protocol", "ModuleList", "PreTrainedModel"}
_PARSED: dict = {}


def _parse(path: Path) -> dict:
    """One libcst parse per file (cached by path and mtime): its functions with
    their source and lines, its classes ({name: (bases, methods)}) and its
    from-imports ({local name: (module, name)}); ``error`` when it does not parse."""
    key = (str(path), path.stat().st_mtime_ns)
    if key in _PARSED:
        return _PARSED[key]
    parsed: dict = {"functions": [], "classes": {}, "imports": {}, "error": None}
    text = path.read_text(encoding="utf-8")
    try:
        wrapper = MetadataWrapper(cst.parse_module(text))
    except cst.ParserSyntaxError as exc:
        parsed["error"] = f"{path}: syntax error: {exc.message}"
        _PARSED[key] = parsed
        return parsed
    positions = wrapper.resolve(PositionProvider)
    lines = text.splitlines(keepends=True)
    functions = parsed["functions"]

    class Collector(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scope: list = []

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            self.scope.append(node.name.value)

        def leave_ClassDef(self, node: cst.ClassDef) -> None:
            self.scope.pop()

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            pos = positions[node]
            qual = ".".join([*self.scope, node.name.value])
            source = "".join(lines[pos.start.line - 1 : pos.end.line])
            functions.append(FunctionSource(path, node.name.value, qual, source, pos.start.line, pos.end.line))
            self.scope.append(node.name.value)

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.scope.pop()

    module = wrapper.module
    module.visit(Collector())
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            bases = []
            for arg in statement.bases:
                value = arg.value
                if isinstance(value, cst.Attribute):
                    bases.append(value.attr.value)
                elif isinstance(value, cst.Name):
                    bases.append(value.value)
            methods = {s.name.value for s in statement.body.body if isinstance(s, cst.FunctionDef)}
            parsed["classes"][statement.name.value] = (bases, methods)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and small.module is not None:
                    module_name = module.code_for_node(small.module)
                    for alias in small.names:
                        if isinstance(alias.name, cst.Name):
                            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else alias.name.value
                            parsed["imports"][local] = (module_name, alias.name.value)
    _PARSED[key] = parsed
    return parsed


def _functions_in(path: Path) -> list:
    parsed = _parse(path)
    if parsed["error"]:
        raise ExplainError(parsed["error"])
    return parsed["functions"]


def _module_info(path: Path) -> dict:
    """Classes ({name: (bases, methods)}) and from-imports of one module; empty when it does not parse."""
    try:
        return _parse(path)
    except OSError:
        return {"classes": {}, "imports": {}}


def _module_file(root: Path, qualname: str) -> str | None:
    parts = qualname.split(".")
    for cut in range(len(parts), 0, -1):
        relative = "/".join(parts[:cut]) + ".py"
        for prefix in ("", "python/"):
            if (Path(root) / prefix / relative).is_file():
                return prefix + relative
    return None


def _class_walk(root: Path, owner: str) -> tuple:
    """([(file, class name, methods)] in base order, complete) for a dotted class
    name, following bases by name through the module and its from-imports."""
    module_file = _module_file(root, owner.rsplit(".", 1)[0])
    order: list = []
    complete = True
    queue = [(module_file, owner.rsplit(".", 1)[-1])] if module_file else []
    if not queue:
        return order, False
    seen = set()
    while queue:
        file, name = queue.pop(0)
        if (file, name) in seen:
            continue
        seen.add((file, name))
        info = _module_info(Path(root) / file)
        if name not in info["classes"]:
            imported = info["imports"].get(name)
            target = _module_file(root, imported[0]) if imported else None
            if target is None:
                if name not in _TERMINAL_BASES:
                    complete = False
                continue
            queue.insert(0, (target, imported[1]))
            continue
        bases, methods = info["classes"][name]
        order.append((file, name, methods))
        queue.extend((file, base) for base in bases)
    return order, complete


def class_has_method(root: Path, owner: str, method: str) -> bool | None:
    """Whether a class (by dotted name) or a base found by name defines ``method``; None when unsure."""
    order, complete = _class_walk(root, owner)
    if any(method in methods for _, _, methods in order):
        return True
    return False if (order and complete) else None


def find_forwards(root: Path, owner: str) -> list:
    """``forward`` of the state owner class and of its bases, nearest first, found by
    name (used only when the scan traced no reader holding the decoder loop; a
    ``forward`` that calls ``super().forward`` leaves the loop to a base)."""
    order, _ = _class_walk(root, owner)
    found = []
    for file, name, methods in order:
        if "forward" in methods:
            found.extend(fn for fn in _functions_in(Path(root) / file) if fn.qualname == f"{name}.forward")
    return found


def locate_function(root: Path, file: str, line: int | None, name: str | None = None, qualname: str | None = None) -> FunctionSource:
    """The innermost function of ``file`` whose lines hold ``line`` (its ``def``
    or a line of its body); falls back to the qualname's method name."""
    path = Path(root) / file
    if not path.is_file():
        raise ExplainError(f"{file}: not found under {root}")
    functions = _functions_in(path)
    if line is not None:
        holding = [f for f in functions if f.first_line <= line <= f.last_line and (name is None or f.name == name)]
        if holding:
            return max(holding, key=lambda f: f.first_line)
    if qualname:
        parts = qualname.split(".")
        for size in (2, 1):
            tail = ".".join(parts[-size:])
            matches = [f for f in functions if f.qualname == tail or f.qualname.endswith("." + tail)]
            if len(matches) == 1:
                return matches[0]
    raise ExplainError(f"{file}:{line}: no function {name or ''} found there")


# ------------------------------------------------------------ pipeline stages


def stage_ranges(root: Path, num_layers: int, pp: int, environ: dict | None = None) -> tuple:
    """[(start, end)] per pipeline rank, computed by evaluating the release's own
    ``get_pp_indices`` (so the version's remainder rule is used); (None, why) when it cannot."""
    if pp == 1:
        return [(0, num_layers)], None
    for relative in PP_INDICES_FILES:
        path = Path(root) / relative
        if not path.is_file():
            continue
        functions = [f for f in _functions_in(path) if f.qualname == "get_pp_indices"]
        if not functions:
            continue
        fn = functions[0]
        ranges = []
        for rank in range(pp):
            outcome = evaluate_function(
                fn.source,
                args={"num_hidden_layers": num_layers, "pp_rank": rank, "pp_size": pp},
                env={"os.environ": dict(environ or {})},
                first_line=fn.first_line,
            )
            value = outcome.return_value
            if outcome.raised or not outcome.complete or not isinstance(value, tuple) or any(is_unknown(v) for v in value):
                why = outcome.raised.source if outcome.raised else (outcome.unknowns[0].why if outcome.unknowns else "no value")
                return None, f"get_pp_indices ({relative}:{fn.first_line}) could not be evaluated for rank {rank}: {why}"
            ranges.append(tuple(value))
        return ranges, f"{relative}:{fn.first_line} get_pp_indices with SGLANG_PP_LAYER_PARTITION unset"
    return None, "get_pp_indices was not found in the scanned tree"


# ------------------------------------------------------------ chain evaluation


@dataclass
class _Rank:
    rank: int
    start: int
    end: int
    is_first: bool
    is_last: bool


# The ways model code reaches its pipeline group, across releases.
_PP_GROUPS = ("self.pp_group", "get_pp_group()", "get_parallel().pp_group")


def _base_env(config: dict, rank: _Rank, pp: int) -> dict:
    env = {"self.config": config, "self.start_layer": rank.start, "self.end_layer": rank.end, "os.environ": {}}
    for group in _PP_GROUPS:
        env[f"{group}.is_last_rank"] = rank.is_last
        env[f"{group}.is_first_rank"] = rank.is_first
        env[f"{group}.rank_in_group"] = rank.rank
        env[f"{group}.world_size"] = pp
    return env


_CALL_RE = r"(self(?:\.\w+)+)\.{method}\s*\("


def _delegation_receivers(source: str, method: str) -> list:
    return list(dict.fromkeys(re.findall(_CALL_RE.format(method=re.escape(method)), source)))


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


def _run_chain(root: Path, hops: list, ids: Any, target: TargetConfig, rank: _Rank, pp: int, protocol: dict, store: dict,
               chain_hops: Sequence[dict] = ()) -> dict:
    """Run the setter hops once (one runner call) on one rank; apply the writes
    to ``store`` (absolute paths from the top model object)."""
    steps: list = []
    unknowns: list = []
    early = raised = None
    args = {protocol["ids_parameter"]: copy.deepcopy(ids)}
    prefix = "self"
    num_layers = target.num_hidden_layers
    for index, hop in enumerate(hops):
        name = hop["qualname"].rsplit(".", 1)[-1]
        fn = locate_function(root, hop["file"], hop.get("line"), name, hop["qualname"])
        config = target.config_for(inner=index > 0)
        env = _base_env(config, rank, pp)
        next_hop = hops[index + 1] if index + 1 < len(hops) else None
        next_method = next_hop["qualname"].rsplit(".", 1)[-1] if next_hop else None
        if next_method:
            for receiver in _delegation_receivers(fn.source, next_method):
                env[receiver] = Obj(next_hop["qualname"].rsplit(".", 2)[-2], methods=frozenset({next_method}))
        # `hasattr(self.X, "m")` on the object the state is written to: answered from
        # the write hop's class (and its bases, by name), or left unknown.
        owner = next((h.get("qualname", "").rsplit(".", 1)[0] for h in chain_hops if h.get("kind") == "write"), None)
        for receiver, method in re.findall(r'hasattr\(\s*(self(?:\.\w+)+)\s*,\s*["\'](\w+)["\']\s*\)', fn.source):
            if receiver in env or f"{receiver}.{method}" in env or not owner:
                continue
            if not re.search(re.escape(receiver) + r"\." + re.escape(protocol["state_attribute"]) + r"\s*=", fn.source):
                continue
            has = class_has_method(root, owner, method)
            if has is not None:
                env[f"{receiver}.{method}"] = "method" if has else ABSENT
        layers = _layer_objects(store, prefix, num_layers, protocol.get("marker_attribute"))
        env.setdefault("self.model.layers", layers["self.model"])
        env.setdefault("self.layers", layers["self"])
        # What this object already holds (earlier calls), relative to its own self.
        for path, value in store.items():
            if path.startswith(prefix + ".") and path[len(prefix):].count(".") >= 1:
                env.setdefault("self" + path[len(prefix):], value)
        outcome = evaluate_function(fn.source, args=args, env=env, first_line=fn.first_line)
        where = f"{hop['file']}:{fn.first_line}"
        config_name = "the text config" if (index > 0 and target.is_nested) else "the top config"
        for note in outcome.unknowns:
            unknowns.append({"expr": note.expr, "file": hop["file"], "line": note.line, "why": note.why})
        decided = "; ".join(
            f"line {b.line}: `{' '.join(b.condition.split())}` is {'unknown' if b.taken == 'unknown' else bool(b.value)}"
            for b in outcome.branches
        )
        shown_args = ", ".join(f"{k}={_fmt(v)}" for k, v in args.items())
        text = f"{fn.qualname} ({where}) called with {shown_args}, self.config = {config_name}"
        if decided:
            text += f"; {decided}"
        for path, value in outcome.writes.items():
            absolute = prefix + path[len("self"):]
            store[absolute] = value
            if path.rsplit(".", 1)[-1] == protocol["state_attribute"]:
                store.pop(_INCOMPLETE, None)  # a complete overwrite of the state
        state_writes = {p: v for p, v in outcome.writes.items() if p.rsplit(".", 1)[-1] == protocol["state_attribute"]}
        for path, value in state_writes.items():
            text += f"; writes {path} = {_fmt(value)} (line {outcome.write_lines.get(path, '?')}){_transform(args, value, protocol)}"
        marker = protocol.get("marker_attribute")
        marks = sorted(p for p in outcome.writes if marker and p.endswith("." + marker))
        if marks:
            text += f"; marks {', '.join(marks)}"
        if outcome.returned_early:
            early = {"file": hop["file"], "line": outcome.returned_early.line, "condition": outcome.returned_early.condition, "hop": fn.qualname}
            text += f"; returns early at line {outcome.returned_early.line} (`{outcome.returned_early.condition}`), so nothing is written on this rank"
            steps.append(text)
            break
        if outcome.raised:
            raised = {"file": hop["file"], "line": outcome.raised.line, "source": outcome.raised.source, "hop": fn.qualname}
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
        calls = [c for c in outcome.calls if c.method == next_method and c.receiver and c.receiver.startswith("self.")]
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
        next_fn = locate_function(root, next_hop["file"], next_hop.get("line"), next_method, next_hop["qualname"])
        names = _params(next_fn)
        args = dict(zip(names, call.args, strict=False))
        args.update(dict(call.kwargs))
        prefix = prefix + call.receiver[len("self"):]
    return {"steps": steps, "unknowns": unknowns, "returned_early": early, "raised": raised}


_INCOMPLETE = "<incomplete>"  # store key: an earlier run stopped, so the state is not known


def _transform(args: dict, value: Any, protocol: dict) -> str:
    """Plain words for what a hop did to the ids it received."""
    received = next(iter(args.values()), None) if args else None
    if not isinstance(value, list) or contains_unknown(value):
        return ""
    if received is None:
        return " (the fallback: no ids were given)"
    if not isinstance(received, (list, tuple)) or contains_unknown(received):
        return ""
    received = list(received)
    shift = protocol["id_shift"]
    if value == received:
        return " (ids kept as given, no shift)"
    if value == [i + shift for i in received]:
        return f" (each id +{shift})"
    return " (ids changed)"


def _state_owner_prefix(store: dict, attribute: str) -> str | None:
    owners = [p[: -len(attribute) - 1] for p in store if p.endswith("." + attribute)]
    return owners[-1] if owners else None


def _consumer_env(store: dict, owner: str | None, config: dict, rank: _Rank, pp: int, num_layers: int, marker: str | None) -> dict:
    env = _base_env(config, rank, pp)
    env["forward_batch.can_run_tbo"] = False
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


# ------------------------------------------------------------ the explanation


def _call_sequence(call_sites: Sequence[dict], protocol: str) -> list:
    sites = [c for c in call_sites if c.get("protocol", protocol) == protocol]

    # Calls made before graph capture ran before those made after it; inside
    # each group the scan's order decides, and a call of unknown order goes last.
    def key(site: dict) -> tuple:
        order = site.get("order")
        return (0 if site.get("before_graph_capture") else 1, order is None, order if order is not None else 0)

    return sorted(sites, key=key)


def _finding(slug: str, severity: str, message: str, hint: str, file: str | None, line: int | None) -> dict:
    return {"slug": slug, "severity": severity, "message": message, "hint": hint, "file": file, "line": line}


def explain_model(
    root: Path,
    model: dict,
    call_sites: list,
    target: TargetConfig,
    draft: DraftConfig,
    pp: int = 1,
    *,
    protocol: dict | None = None,
) -> dict:
    root = Path(root)
    proto = dict(DEFAULT_PROTOCOL)
    proto.update(protocol or {})
    state_attr = proto["state_attribute"]
    marker = proto.get("marker_attribute")
    chain = model.get("chain") or []
    hops = []
    for hop in chain:
        # The same method reached from two call lines is one hop (the calls are alternatives).
        if hop.get("kind") in ("setter", "delegate") and all(h["qualname"] != hop["qualname"] for h in hops):
            hops.append(hop)
    reads = [h for h in chain if h.get("kind") == "read"]
    unresolved = [h for h in chain if h.get("kind") == "unresolved"]
    num_layers = target.num_hidden_layers
    findings: list = []
    unknowns: list = []
    notes: list = []
    result: dict = {
        "entry": model.get("entry"),
        "requested_ids": list(draft.layer_ids) if draft.layer_ids is not None else None,
        "ids_key": draft.ids_key,
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
    model_protocol = model.get("protocol") or proto["name"]
    if model_protocol != proto["name"]:
        # Draft configs of other protocols (e.g. DFlash's target_layer_ids) are not read here.
        unknowns.append({"expr": model.get("entry"), "file": model.get("file"), "line": model.get("line"),
                         "why": f"explain covers {proto['name']}; this chain is {model_protocol}"})
        return result
    if not hops:
        unknowns.append({"expr": model.get("entry"), "file": model.get("file"), "line": model.get("line"), "why": f"the chain has no setter hop (verdict {model.get('verdict')})"})
        return result
    for hop in unresolved:
        unknowns.append({"expr": hop.get("qualname"), "file": hop.get("file"), "line": hop.get("line"), "why": hop.get("reason", "unresolved hop")})

    # Which ids reach the setter: SGLang's runner reads only the nested key.
    runner_keys = proto["runner_ids_keys"]
    runner_ids = list(draft.layer_ids) if draft.layer_ids is not None and draft.ids_key in runner_keys else None
    result["runner_ids"] = runner_ids
    if draft.layer_ids is not None and runner_ids is None:
        notes.append(
            f"the draft names ids under `{draft.ids_key}`, but the runner reads only {', '.join(f'`{k}`' for k in runner_keys)}; it calls the setter with None"
        )
    if draft.use_aux_hidden_state is False:
        notes.append("the draft sets eagle_config.use_aux_hidden_state = false")

    # Pipeline stages.
    ranges, how = stage_ranges(root, num_layers, pp)
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
    sequence = _call_sequence(call_sites, proto["name"])
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
            run = _run_chain(root, hops, ids, target, rank, pp, proto, store, chain)
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

    def capture_on(rank: _Rank, store: dict) -> dict | None:
        owner = _state_owner_prefix(store, state_attr)
        ltc = store.get(f"{owner}.{state_attr}") if owner else None
        out = {"owner": owner, "layers_to_capture": ltc, "captured": None, "visited": None, "result": None}
        if _INCOMPLETE in store:
            out["layers_to_capture"] = Unknown(state_attr, f"the setter chain could not be evaluated: {store[_INCOMPLETE]}")
            return out
        config = target.config_for(inner=True)
        env = _consumer_env(store, owner, config, rank, pp, num_layers, marker)
        value = ltc if ltc is not None else []  # __init__ sets an empty list
        # The reader that holds the decoder loop (a chain may list the setter's own read first).
        candidates = [(read, locate_function(root, read["file"], read.get("line"), None, read.get("qualname"))) for read in reversed(reads)]
        owner_class = write_hop.get("qualname", "").rsplit(".", 1)[0] if write_hop else None
        if owner_class:
            for forward in find_forwards(root, owner_class):
                if any(fn.source == forward.source for _, fn in candidates):
                    continue
                relative = str(forward.file.relative_to(root)) if forward.file.is_relative_to(root) else str(forward.file)
                candidates.append(({"kind": "read", "qualname": forward.qualname, "file": relative, "line": forward.first_line,
                                    "found_by_name": True}, forward))
        for read, fn in candidates:
            result_ = captured_indices(fn.source, value, env, state_path=f"self.{state_attr}", first_line=fn.first_line, marker_attribute=marker)
            if result_.loop_line is not None:
                out.update(captured=list(result_.captured), visited=list(result_.visited), result=result_, read=read, fn=fn)
                break
        return out

    write_hop = next((h for h in chain if h.get("kind") == "write"), None)
    eager = capture_on(last_rank, last["store"])
    if eager.get("read", {}).get("found_by_name"):
        notes.append(f"the scan traced no reader holding the decoder loop; used {eager['read']['qualname']} "
                     f"({eager['read']['file']}:{eager['read']['line']}), found by name from {write_hop['qualname'].rsplit('.', 1)[0]}")
    graph = capture_on(last_rank, last["graph_store"]) if last["graph_store"] is not None else None
    cap = eager.get("result")
    result["layers_to_capture"] = _plain(eager["layers_to_capture"])
    if cap is not None:
        for note in cap.unknowns:
            unknowns.append({"expr": note.expr, "file": eager["read"]["file"], "line": note.line, "why": note.why})
        if cap.complete:
            result["captured_indices"] = list(cap.captured)
            result["effective_layers"] = list(cap.captured_outputs)
        result["loop"] = {"file": eager["read"]["file"], "line": cap.loop_line, "source": cap.loop_source, "visited": [cap.visited[0], cap.visited[-1]] if cap.visited else []}
    if assumed_sequence or any(s.get("before_graph_capture") is None for s in sequence):
        notes.append("the order of runner calls relative to CUDA-graph capture is not known: graph layers not computed")
    elif any(s.get("before_graph_capture") for s in sequence):
        if graph is not None and graph.get("result") is not None and graph["result"].complete:
            result["graph_layers"] = list(graph["result"].captured_outputs)
            result["graph_layers_to_capture"] = _plain(graph["layers_to_capture"])
            result["graph_layers_differ"] = result["graph_layers"] != result["effective_layers"]
    else:
        notes.append("no runner call happens before CUDA-graph capture: graphs are captured with the initial empty list")
        result["graph_layers"] = []
        result["graph_layers_differ"] = result["effective_layers"] != []

    facts = _Facts(
        proto=proto, draft=draft, target=target, pp=pp, hops=hops, write_hop=write_hop, sequence=sequence,
        runner_ids=runner_ids, ranks=ranks, ranges_known=ranges_known, ranges_how=how, per_rank=per_rank,
        loop_file=eager["read"]["file"] if cap is not None else None, cap=cap,
        layers_to_capture=_known_list(eager["layers_to_capture"]), result=result,
    )
    findings.extend(_fallback_findings(facts))
    findings.extend(_offset_findings(facts))
    lost_to_earlier_stages = _pipeline_findings(facts, findings)
    findings.extend(_unreachable_findings(facts, lost_to_earlier_stages))
    findings.extend(_count_findings(facts, notes))
    if pp > 1 and not ranges_known:
        # The last stage's range is not known, so neither is what its loop visits.
        result["captured_indices"] = result["effective_layers"] = None
        unknowns.append({"expr": "get_pp_indices", "file": None, "line": None, "why": how})

    result["ranks"] = [
        {"rank": r.rank, "layers": [r.start, r.end], "returned_early": bool(per_rank[r.rank]["runs"][-1]["returned_early"])}
        for r in ranks
    ]
    return result


# ------------------------------------------------------------ findings


@dataclass
class _Facts:
    """What the findings are computed from (one explained model)."""

    proto: dict
    draft: DraftConfig
    target: TargetConfig
    pp: int
    hops: list
    write_hop: dict | None
    sequence: list
    runner_ids: list | None
    ranks: list
    ranges_known: bool
    ranges_how: str | None
    per_rank: dict
    loop_file: str | None
    cap: Any  # CaptureResult of the eager path, or None
    layers_to_capture: list | None  # fully known list, else None
    result: dict

    @property
    def final_run(self) -> dict:
        return self.per_rank[self.ranks[-1].rank]["runs"][-1]

    @property
    def state_site(self) -> dict:
        return self.write_hop or self.hops[0]

    @property
    def loop_line(self) -> int | None:
        return self.cap.loop_line if self.cap is not None else None


def _known_list(value: Any) -> list | None:
    return list(value) if isinstance(value, (list, tuple)) and not contains_unknown(value) else None


def _fallback_findings(f: _Facts) -> list:
    out = []
    effective = f.result["effective_layers"]
    final = f.final_run
    if final["ids"] is None and not final["returned_early"]:
        site = final["site"]
        draft = f.draft
        if draft.layer_ids is None:
            why = f"the draft config {draft.path.name} names no layer ids ({' / '.join(f.proto['runner_ids_keys'])} absent)"
        elif f.runner_ids is None:
            why = f"the draft's ids {list(draft.layer_ids)} are under `{draft.ids_key}`, which SGLang's runner does not read"
        else:
            why = f"the last runner call ({site.get('file')}:{site.get('line')}) passes no ids"
        hint = ("put the ids under eagle_config.eagle_aux_hidden_state_layer_ids in the draft's config.json"
                if draft.layer_ids is None or f.runner_ids is None else "pass the draft's ids on every call of the setter")
        out.append(_finding(
            "fallback-triggered", "warning",
            f"{why}, so the fallback {f.proto['fallback']} runs: layers_to_capture = {f.layers_to_capture}, "
            f"capturing the outputs of layers {effective}",
            hint, f.state_site.get("file"), f.state_site.get("line")))
    if f.result["graph_layers_differ"] and f.result["graph_layers"] is not None:
        graph_sites = [s for s in f.sequence if s.get("before_graph_capture")]
        site = graph_sites[-1] if graph_sites else {}
        out.append(_finding(
            "fallback-triggered", "warning",
            f"CUDA graphs are captured after the call at {site.get('file')}:{site.get('line')} "
            f"({'no ids' if not site.get('passes_ids') else 'with ids'}), so replayed graphs capture the outputs of layers "
            f"{f.result['graph_layers']} while the eager path captures {effective}",
            "make the configured setter call before CUDA-graph capture, or pass the ids in the graph runner's call",
            site.get("file"), site.get("line")))
    return out


def _offset_findings(f: _Facts) -> list:
    ltc = f.layers_to_capture
    if f.runner_ids is None or f.final_run["ids"] is None or ltc is None:
        return []
    shift = f.proto["id_shift"]
    expected = [i + shift for i in f.runner_ids]
    if ltc == expected:
        return []
    effective = f.result["effective_layers"]
    captures = (f"the loop captures the outputs of layers {effective}" if effective is not None
                else f"which would be the outputs of layers {[i - shift for i in ltc]}")
    return [_finding(
        "offset-mismatch", "error",
        f"the draft was trained on the outputs of layers {f.runner_ids} (layers_to_capture should be {expected} with the "
        f"+{shift} shift), but the setter stores {ltc}: {captures}",
        f"apply the same +{shift} shift to explicit ids in every setter (input of layer i = output of layer i-1)",
        f.state_site.get("file"), f.state_site.get("line"))]


def _pipeline_findings(f: _Facts, findings: list) -> list:
    """Appends pipeline-guard findings; returns the entries lost to earlier stages."""
    ltc = f.layers_to_capture
    if f.pp == 1 or ltc is None:
        return []
    setter = f.hops[0]
    if not f.ranges_known:
        findings.append(_finding(
            "pipeline-guard", "warning",
            f"with pp={f.pp} the stage ranges could not be computed ({f.ranges_how}); which ids live on earlier stages is unknown",
            "check get_pp_indices / SGLANG_PP_LAYER_PARTITION", setter.get("file"), setter.get("line")))
        return []
    last = f.ranks[-1]
    lost = [i for i in ltc if i < last.start]
    if not lost:
        return []
    guard = next((f.per_rank[r.rank]["runs"][-1]["returned_early"] for r in f.ranks[:-1]
                  if f.per_rank[r.rank]["runs"][-1]["returned_early"]), None)
    if guard:
        what = f"the setter returns early off the last rank ({guard['hop']}, line {guard['line']}: `{guard['condition']}`)"
    else:
        what = "nothing in this chain hands earlier stages' aux states to the last stage"
    findings.append(_finding(
        "pipeline-guard", "error",
        f"with pp={f.pp} the last stage runs layers {last.start}..{last.end - 1}; layers_to_capture entries {lost} "
        f"(outputs of layers {[i - 1 for i in lost]}) lie on earlier stages and {what}, so they are never captured",
        "capture on every stage and send aux states with the pipeline proxy tensors, or choose ids on the last stage",
        (guard or setter).get("file"), (guard or setter).get("line")))
    return lost


def _unreachable_findings(f: _Facts, lost_to_earlier_stages: list) -> list:
    raised = f.final_run["raised"]
    if raised and raised["source"].startswith("IndexError"):
        return [_finding(
            "unreachable-layer", "error",
            f"{raised['hop']} raises at start-up: {raised['source']}; a layer id of num_hidden_layers - 1 or more asks for a layer that does not exist",
            f"ids must be in 0..{f.target.num_hidden_layers - 2} for a {f.target.num_hidden_layers}-layer target",
            raised["file"], raised["line"])]
    cap, ltc = f.cap, f.layers_to_capture
    if cap is None or not cap.complete or ltc is None:
        return []
    missed = [i for i in cap.never_visited if i not in lost_to_earlier_stages]
    if not missed:
        return []
    n = f.target.num_hidden_layers
    span = f"{cap.visited[0]}..{cap.visited[-1]}" if cap.visited else "?"
    outside = [i for i in missed if i not in cap.visited]
    unmarked = [i for i in missed if i in cap.visited]
    out = []
    if outside:
        dropped = [i - 1 for i in outside if i >= 1]
        what = f"the outputs of layers {dropped} are silently dropped" if dropped else "nothing is captured for them"
        out.append(_finding(
            "unreachable-layer", "error",
            f"layers_to_capture entries {outside} are never visited by the loop over {span} (`{cap.loop_source}`), so "
            f"{what} and {len(cap.captured)} of {len(ltc)} states are captured",
            f"with the +1 shift, ids must be in -1..{n - 2} for a {n}-layer target (-1 = the embedding output); "
            "the last layer's output is never captured by this loop",
            f.loop_file, f.loop_line))
    if unmarked:
        marker = f.proto.get("marker_attribute")
        how = (f"tests the per-layer marker `{marker}`, which nothing on this chain sets for them"
               if cap.tested_by == ("marker",) else "never finds them")
        out.append(_finding(
            "unreachable-layer", "error",
            f"the loop over {span} (`{cap.loop_source}`) visits layers {unmarked} but {how}, so the outputs of layers "
            f"{[i - 1 for i in unmarked]} are not captured ({len(cap.captured)} of {len(ltc)} states)",
            "make the setter mark the layers the forward tests (or make the forward read the list)",
            f.loop_file, f.loop_line))
    return out


def _count_findings(f: _Facts, notes: list) -> list:
    out = []
    draft, target, cap = f.draft, f.target, f.cap
    count, source = draft.expected_aux_count(target.hidden_size)
    if count is None and draft.fc is None:
        # SGLang sizes the draft input as target_hidden * 3 when the draft names no ids (eagle_utils.py).
        count, source = 3, "SGLang's default of 3 aux states when the draft names none"
    f.result["expected_aux"] = {"count": count, "source": source}
    if draft.target_hidden_size is not None and target.hidden_size is not None and draft.target_hidden_size != target.hidden_size:
        out.append(_finding(
            "count-mismatch", "error",
            f"the draft was trained for a target with hidden size {draft.target_hidden_size}, but this target's hidden size is {target.hidden_size}",
            "use a draft trained for this target", str(draft.path), None))
    if count is None:
        notes.append(f"expected number of aux states unknown: {source}")
        return out
    if cap is None or not cap.complete:
        return out
    got = len(cap.captured)
    if got == count:
        return out
    hidden = draft.target_hidden_size or target.hidden_size
    ltc = f.layers_to_capture
    dup = ""
    if ltc is not None and len(set(ltc)) != len(ltc):
        dup = f" (layers_to_capture {ltc} repeats an index, which the loop captures once)"
    out.append(_finding(
        "count-mismatch", "error",
        f"the draft expects {count} aux states ({source}) but the loop captures {got}{dup}: "
        f"{got} x {hidden} = {got * hidden if hidden else '?'} inputs instead of {count * hidden if hidden else '?'}",
        "make the captured ids match the draft's training ids one to one",
        f.loop_file, f.loop_line))
    return out


def _plain(value: Any) -> Any:
    """JSON-ready: unknowns become {"unknown": expr, "why": ...}, tuples lists."""
    if is_unknown(value):
        return {"unknown": value.expr, "why": value.why}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Obj):
        return {"object": value.name}
    return value


# ------------------------------------------------------------ words


def _outputs(indices: list | None) -> str:
    if indices is None:
        return "unknown"
    if not indices:
        return "nothing"
    parts = ["the embedding output" if i == -1 else f"layer {i}" for i in indices]
    return ", ".join(parts)


def format_explanation(result: dict) -> str:
    lines = []
    entry = result.get("entry") or "?"
    lines.append(f"{entry}")
    n = result.get("num_hidden_layers")
    lines.append(f"  target: {n} layers, hidden size {result.get('hidden_size')}" + (f", pp={result['pp']}" if result.get("pp", 1) > 1 else ""))
    if result.get("requested_ids") is None:
        lines.append("  draft: names no layer ids")
    else:
        lines.append(f"  draft asks for the outputs of layers {result['requested_ids']} (from `{result['ids_key']}`)")
    if result.get("runner_ids") is None and result.get("requested_ids") is not None:
        lines.append("  the runner does not read that key, so it passes no ids")
    lines.append("")
    lines.append("What the code does:")
    for step in result.get("steps", []):
        lines.append(f"  {step}")
    lines.append("")
    ltc = result.get("layers_to_capture")
    lines.append(f"  layers_to_capture = {ltc}")
    loop = result.get("loop")
    if loop:
        visited = loop.get("visited") or []
        span = f"{visited[0]}..{visited[1]}" if len(visited) == 2 else "an unknown range"
        lines.append(f"  the decoder loop `{loop.get('source')}` ({loop.get('file')}:{loop.get('line')}) visits layers {span}")
    captured = result.get("captured_indices")
    if captured is not None:
        lines.append(f"  it captures the input of layers {captured}, i.e. the output of {_outputs(result.get('effective_layers'))}")
        lines.append("  (the input of layer i is the output of layer i-1; index 0 is the embedding output)")
    else:
        lines.append("  the captured layers could not be determined")
    ranks = result.get("ranks") or []
    if len(ranks) > 1:
        lines.append("  pipeline stages:")
        for rank in ranks:
            start, end = rank["layers"]
            state = "the setter returns early here" if rank["returned_early"] else "the setter runs here"
            lines.append(f"    rank {rank['rank']}: layers {start}..{end - 1} ({state})")
    lines.append("")
    lines.append(f"Eager path captures the outputs of: {_outputs(result.get('effective_layers'))}")
    if result.get("graph_layers") is None:
        lines.append("Replayed CUDA graphs: not computed (the runner's call order is not known)")
    elif result.get("graph_layers_differ"):
        lines.append(f"Replayed CUDA graphs capture the outputs of: {_outputs(result.get('graph_layers'))}")
    else:
        lines.append("Replayed CUDA graphs capture the same layers")
    expected = result.get("expected_aux") or {}
    if expected.get("count") is not None:
        lines.append(f"The draft expects {expected['count']} aux states ({expected['source']})")
    for note in result.get("notes", []):
        lines.append(f"note: {note}")
    findings = result.get("findings", [])
    lines.append("")
    if findings:
        lines.append("Findings:")
        for f in findings:
            where = f"{f['file']}:{f['line']}" if f.get("line") else (f.get("file") or "")
            lines.append(f"  {where}: {f['slug']} ({f['severity']}) {f['message']}")
            lines.append(f"      fix: {f['hint']}")
    else:
        lines.append("No findings.")
    unknowns = result.get("unknowns", [])
    if unknowns:
        lines.append("Could not evaluate:")
        for u in unknowns:
            lines.append(f"  {u.get('file')}:{u.get('line')}: `{str(u.get('expr')).splitlines()[0]}`: {u.get('why')}")
    return "\n".join(lines)


# ------------------------------------------------------------ command


def explain_command():
    """The ``tracer explain`` click command (built on demand so click stays a CLI-only import)."""
    import json

    import click

    from tracer.configs import ConfigError, load_draft_config, load_target_config

    @click.command("explain")
    @click.argument("path", type=click.Path(exists=True, file_okay=False))
    @click.option("--target-config", required=True, type=click.Path(exists=True), help="target config.json or its folder")
    @click.option("--draft-config", required=True, type=click.Path(exists=True), help="draft config.json or its folder")
    @click.option("--entry", default=None, help="entry class (default: the target's architectures)")
    @click.option("--pp", default=1, type=int, show_default=True, help="pipeline-parallel size")
    @click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
    def explain(path, target_config, draft_config, entry, pp, fmt):
        """Explain which hidden states one model's EAGLE-3 chain really captures."""
        from tracer.engine import scan_to_json

        try:
            target = load_target_config(target_config)
            draft = load_draft_config(draft_config)
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from None
        if pp < 1:
            raise click.UsageError("--pp must be at least 1")
        scan = scan_to_json(path)
        model = pick_model(scan, target, entry, DEFAULT_PROTOCOL["name"])
        if model is None:
            raise click.UsageError(f"no entry class matches {entry or list(target.architectures)}")
        root = Path(scan.get("root") or path)
        try:
            result = explain_model(root, model, scan.get("call_sites", []), target, draft, pp=pp)
        except ExplainError as exc:
            raise click.UsageError(str(exc)) from None
        click.echo(json.dumps(result, indent=2, default=str) if fmt == "json" else format_explanation(result))
        if any(f["severity"] == "error" for f in result["findings"]):
            raise SystemExit(1)

    return explain


def annotate_scan(scan: dict, target: TargetConfig, draft: DraftConfig, pp: int = 1, entry: str | None = None,
                  protocol: str = DEFAULT_PROTOCOL["name"]) -> dict:
    """For ``tracer scan --target-config/--draft-config``: a copy of the scan JSON
    whose model picked by the target config (or ``entry``) carries
    ``effective_layers`` (eager path), ``graph_layers`` (only when the CUDA-graph
    path differs) and ``explain`` (the full result); its config findings are
    appended to ``findings`` in the scan's finding shape."""
    out = copy.deepcopy(scan)
    model = pick_model(out, target, entry, protocol)
    if model is None:
        out.setdefault("input_errors", []).append({
            "file": str(target.path), "line": 1,
            "reason": f"no scanned entry class matches {entry or list(target.architectures)}"})
        return out
    root = Path(out.get("root") or ".")
    result = explain_model(root, model, out.get("call_sites", []), target, draft, pp=pp)
    model["effective_layers"] = result["effective_layers"]
    if result.get("graph_layers_differ"):
        model["graph_layers"] = result["graph_layers"]
    model["explain"] = result
    hops = [h.get("qualname") for h in model.get("chain", [])]
    for finding in result["findings"]:
        model.setdefault("findings", []).append(finding["slug"])
        out.setdefault("findings", []).append({
            "slug": finding["slug"], "severity": finding["severity"], "protocol": protocol,
            "entry": model.get("entry"), "file": finding["file"], "line": finding["line"], "col": 1,
            "message": finding["message"], "hint": finding["hint"], "chain": hops})
    return out


def pick_model(scan: dict, target: TargetConfig, entry: str | None, protocol: str) -> dict | None:
    """The scan model for ``entry`` (full or class name) or the target's architectures."""
    models = [m for m in scan.get("models", []) if m.get("protocol", protocol) == protocol]
    wanted = [entry] if entry else list(target.architectures)
    for name in wanted:
        for model in models:
            qual = model.get("entry", "")
            if qual == name or qual.rsplit(".", 1)[-1] == name:
                return model
    return None
