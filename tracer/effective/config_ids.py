"""Effective layers where the ids travel on the config object (no setter).

The config builder the scan picked (the chain's setter hop: LMDeploy's
``LlamaModelConfigBuilder.build``) is evaluated on the target config with the pack's
``[source] builder_arguments`` (what the engine passes for this protocol); a call it makes
to another builder (``cfg = DefaultModelConfigBuilder.build(hf_config, ...)``) is answered
from that callee's ``return Cls(key=expr, ...)``, each keyword evaluated on the same
arguments. The ``__init__`` that stores the attribute (the chain's write hop) then runs on
the config the builder wrote, and the forward's loop on what it stored. What the draft
names is never read on this path: that is what explain reports.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracer.checks import finding
from tracer.effective.configs import DraftConfig, TargetConfig
from tracer.effective.queries import capture_helpers
from tracer.effective.sources import ExplainError, FunctionSource, Sources
from tracer.interp.evaluate import Obj, captured_indices, contains_unknown, evaluate_function, is_unknown
from tracer.model.protocol import Protocol
from tracer.model.results import Hop
from tracer.present.scan_json import finding_to_json
from tracer.resolve.resolver import ClassRef


def _params(fn: FunctionSource) -> list[str]:
    tree = ast.parse(textwrap.dedent(fn.source))
    node = tree.body[0]
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    return [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]]


def _arguments(proto: Protocol) -> dict[str, Any]:
    """``[source] builder_arguments``: "name=literal" (``spec_method='eagle3'``)."""
    out: dict[str, Any] = {}
    for item in proto.builder_arguments:
        name, _, literal = item.partition("=")
        try:
            out[name.strip()] = ast.literal_eval(literal.strip())
        except (ValueError, SyntaxError):
            continue
    return out


def _returned_keywords(sources: Sources, fn: FunctionSource, args: dict[str, Any], name: str) -> Obj | None:
    """What ``fn`` returns when its last statement is ``return Cls(key=expr, ...)``: an object
    with each keyword whose expression evaluates on ``args``."""
    try:
        tree = ast.parse(textwrap.dedent(fn.source))
    except SyntaxError:
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    last = body[-1] if body else None
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Call)):
        return None
    params = [p for p in _params(fn) if p not in ("self", "cls")]
    given = {k: v for k, v in args.items() if k in params}
    header = "def _value(" + ", ".join(f"{p}=None" for p in params) + ", **kwargs):\n    return "
    attrs = []
    for keyword in last.value.keywords:
        if keyword.arg is None:
            continue
        outcome = evaluate_function(header + ast.unparse(keyword.value) + "\n", args=given, env={})
        value = outcome.return_value
        if outcome.complete and not is_unknown(value) and not contains_unknown(value):
            attrs.append((keyword.arg, value))
    return Obj(name, attrs=tuple(attrs))


def _bind_calls(sources: Sources, fn: FunctionSource, module: str, args: dict[str, Any]) -> dict[str, Any]:
    """``Other.method(...)`` calls of the builder, answered from the callee's return."""
    env: dict[str, Any] = {}
    for owner, method in dict.fromkeys(re.findall(r"\b([A-Z]\w*)\.(\w+)\(", fn.source)):
        ref = sources.resolver.resolve_class(module, owner)
        if not isinstance(ref, ClassRef):
            continue
        try:
            callee = sources.of_qualname(f"{ref.fullname}.{method}")
        except ExplainError:
            continue
        returned = _returned_keywords(sources, callee, args, f"{owner}.{method}()")
        if returned is not None:
            env[f"{owner}.{method}()"] = returned
    return env


@dataclass
class ConfigRun:
    """What running a config-carried chain's builders on the target config found."""

    steps: list[str] = field(default_factory=list)  # what each builder did, in words
    unknowns: list[dict[str, Any]] = field(default_factory=list)  # explain's unknowns (expr, file, line, why)
    stored: Any = None  # the value the state owner stores (None: not known)
    written: tuple[str, int | None] | None = None  # (file, line) where the builder wrote the config attribute
    builder: str | None = None  # the builder's qualname


def run_config_chain(sources: Sources, proto: Protocol, chain: Sequence[Hop], target: TargetConfig) -> ConfigRun:
    """Steps, unknowns, the value stored on the state owner (``None`` when not known) and
    where the builder wrote it."""
    out = ConfigRun()
    steps, unknowns = out.steps, out.unknowns
    config = dict(target.config_for(inner=False))
    written = None
    for hop in (h for h in chain if h.kind == "setter"):
        fn = sources.of_qualname(hop.qualname)
        module = sources.split(hop.qualname)
        params = _params(fn)
        args = dict(_arguments(proto))
        config_param = next((p for p in params if p not in ("self", "cls")), None)
        if config_param is None:
            continue
        args = {k: v for k, v in args.items() if k in params or "kwargs" in fn.source}
        args[config_param] = config
        env = _bind_calls(sources, fn, module[0] if module else "", args)
        outcome = evaluate_function(fn.source, args=args, env=env, first_line=fn.first_line)
        for note in outcome.unknowns:
            unknowns.append({"expr": note.expr, "file": hop.file, "line": note.line, "why": note.why})
        path = f"{config_param}.{proto.config_attribute}"
        shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if k != config_param)
        text = f"{fn.qualname} ({hop.file}:{fn.first_line}) run on the target config ({shown})"
        decided = "; ".join(f"line {b.line}: `{' '.join(b.condition.split())}` is "
                            f"{'unknown' if b.taken == 'unknown' else bool(b.value)}" for b in outcome.branches)
        if decided:
            text += f"; {decided}"
        if path in outcome.writes:
            written = outcome.writes[path]
            line = outcome.write_lines.get(path)
            text += f"; writes {path} = {_fmt(written)} (line {line}), whatever the draft names"
            out.written = (hop.file, line)
            out.builder = fn.qualname
            steps.append(text)
            break
        steps.append(text + f"; does not write {path}")
    if written is None or contains_unknown(written):
        return out
    config[proto.config_attribute] = written
    stored = _stored(sources, proto, chain, config, steps, unknowns)
    out.stored = stored
    return out


def _stored(sources: Sources, proto: Protocol, chain: Sequence[Hop], config: dict[str, Any], steps: list[str],
            unknowns: list[dict[str, Any]]) -> Any:
    """The value the state owner's ``__init__`` stores from the config (the chain's write hop)."""
    write = next((h for h in chain if h.kind == "write"), None)
    if write is None:
        return None
    owner = write.qualname.rsplit(".", 1)[0]
    init = next((h for h in chain if h.kind == "delegate" and h.qualname == f"{owner}.__init__"), None)
    if init is None:
        return None
    fn = sources.of_qualname(init.qualname)
    params = [p for p in _params(fn) if p != "self"]
    if not params:
        return None
    outcome = evaluate_function(fn.source, args={params[0]: config}, env={}, first_line=fn.first_line)
    path = f"self.{proto.state_attribute}"
    if path not in outcome.writes:
        why = outcome.stopped.why if outcome.stopped else f"it does not write {path}"
        unknowns.append({"expr": init.qualname, "file": init.file, "line": init.line, "why": why})
        return None
    value = outcome.writes[path]
    steps.append(f"{fn.qualname} ({init.file}:{fn.first_line}) stores {path} = {_fmt(value)} "
                 f"(line {outcome.write_lines.get(path, '?')})")
    return value


def _fmt(value: Any) -> str:
    return str(list(value)) if isinstance(value, tuple) else str(value)




def explain_config(sources: Sources, proto: Protocol, chain: Sequence[Hop], target: TargetConfig,
                   draft: DraftConfig, result: dict[str, Any], origin: Protocol | None = None) -> bool:
    """Fill explain's ``result`` for a config-carried protocol; False when the builder's
    value is not known (the caller then says where the ids come from)."""
    run = run_config_chain(sources, proto, chain, target)
    result["steps"].extend(run.steps)
    result["unknowns"].extend(run.unknowns)
    stored = run.stored
    num_layers = target.num_hidden_layers
    if stored is None or contains_unknown(stored) or num_layers is None:
        return False
    result["layers_to_capture"] = list(stored) if isinstance(stored, (list, tuple)) else stored
    result["ids_written_by"] = run.builder
    attribute = proto.state_attribute
    env: dict[str, Any] = {"self.config": target.config_for(inner=True), "self.start_layer": 0,
                           "self.end_layer": num_layers, f"self.{attribute}": stored,
                           "self.layers": [Obj(f"layers[{i}]", closed=True) for i in range(num_layers)]}
    reads = [h for h in chain if h.kind == "read"]
    helpers = capture_helpers(sources, reads, attribute)
    cap = None
    for read in reads:
        fn = sources.of_qualname(read.qualname)
        found = captured_indices(fn.source, stored, env, state_path=f"self.{attribute}", first_line=fn.first_line,
                                 helpers=helpers)
        if found.loop_line is not None:
            cap = found
            result["loop"] = {"file": read.file, "line": found.loop_line, "source": found.loop_source,
                              "visited": [found.visited[0], found.visited[-1]] if found.visited else [],
                              "after_layer": found.after_layer}
            for note in found.unknowns:
                result["unknowns"].append({"expr": note.expr, "file": read.file, "line": note.line, "why": note.why})
            break
    if cap is None or not cap.complete:
        return True
    result["captured_indices"] = list(cap.captured)
    result["effective_layers"] = effective = list(cap.captured_outputs)
    result["notes"].append(f"the ids reach the model as config.{proto.config_attribute}, written by {run.builder}: "
                           "no runner call passes the draft's ids")
    if draft.layer_ids is None:
        return True
    shift = origin.id_shift if origin is not None else proto.id_shift
    trained = sorted(i + shift - 1 for i in draft.layer_ids)
    if trained != sorted(effective):
        file, line = run.written or (None, None)
        item = finding("fallback-triggered", "config", protocol=proto.name, entry=result.get("entry"),
                       file=file or "", line=line or 0, builder=run.builder,
                       attribute=proto.config_attribute, stored=result["layers_to_capture"],
                       ids=list(draft.layer_ids), trained=trained, effective=effective,
                       convention=f"{origin.framework}'s" if origin is not None else "this framework's")
        result["findings"].append(finding_to_json(item) | {"file": file, "line": line})
    return True


__all__ = ["ConfigRun", "explain_config", "run_config_chain"]
