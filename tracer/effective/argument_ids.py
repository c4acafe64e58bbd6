"""Effective layers where the ids travel in a forward argument (TensorRT-LLM's spec_metadata).

The ids are a field of a metadata object the executor builds from its own settings, not
from the draft's ``config.json``: with none configured, the class's defaulting method (the
pack's ``[argument] default_classes / default_method / default_field``) decides. Explain runs
that method with the interpreter on an instance whose fields are the class body's literal
defaults, the target's layer count (``[argument] layers_field``) and no configured ids, and
reads the field it writes. The layers call the hook after layer i ran, so an id names the
output of layer i (the pack's ``id_shift``). Where the draft was trained on other layers the
default would feed it the wrong states unless the executor's setting names them: a
``fallback-triggered`` finding (variant ``default-field``), with the ids to configure.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from tracer.checks import finding
from tracer.effective.configs import DraftConfig, TargetConfig
from tracer.effective.sources import ExplainError, Sources
from tracer.interp.evaluate import contains_unknown, evaluate_function, is_unknown
from tracer.model.protocol import Protocol
from tracer.model.results import Hop
from tracer.present.scan_json import finding_to_json
from tracer.resolve.resolver import ClassRef
from tracer.resolve.tree import classes_named


def _field_defaults(sources: Sources, ref: ClassRef) -> dict[str, Any]:
    """``name: T = literal`` (and ``name = literal``) in the class body and its bases' bodies."""
    env: dict[str, Any] = {}
    classes, _ = sources.resolver.mro(ref)
    for cls in reversed(classes):  # the most derived class wins
        body = sources.class_body(cls)
        try:
            tree = ast.parse(body) if body else None
        except SyntaxError:
            tree = None
        node = tree.body[0] if tree is not None and tree.body else None
        for stmt in node.body if isinstance(node, ast.ClassDef) else ():
            target, value = None, None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                target, value = stmt.target.id, stmt.value
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, value = stmt.targets[0].id, stmt.value
            if target is None or value is None:
                continue
            try:
                env[f"self.{target}"] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                continue
    return env


def explain_argument(sources: Sources, proto: Protocol, chain: Sequence[Hop], target: TargetConfig,
                     draft: DraftConfig, result: dict[str, Any]) -> None:
    """Fill explain's ``result`` for a protocol whose ids travel in a forward argument."""
    result["ids_source"] = "argument"
    notes, unknowns, steps = result["notes"], result["unknowns"], result["steps"]
    notes.append(f"the layers call {proto.argument_parameter}.{proto.argument_hook}(...) (the chain's read hops); "
                 f"the ids are {proto.default_field or 'set'} on that object, built from the executor's settings "
                 "(not from the draft's config.json)")
    n = target.num_hidden_layers
    field = f"self.{proto.default_field}"
    values: list[tuple[ClassRef, Any, str, int]] = []
    for ref in classes_named(sources.project, proto, proto.default_classes) \
            if proto.default_method and proto.default_field else ():
        try:
            fn = sources.of_qualname(f"{ref.fullname}.{proto.default_method}")
        except ExplainError:
            continue
        env = _field_defaults(sources, ref)
        env[field] = None  # the executor names no ids: the default decides
        if n is not None:
            env[f"self.{proto.layers_field}"] = n
        outcome = evaluate_function(fn.source, args={}, env=env, first_line=fn.first_line)
        decided = "; ".join(f"line {b.line}: `{' '.join(b.condition.split())}` is "
                            f"{'unknown' if b.taken == 'unknown' else bool(b.value)}" for b in outcome.branches)
        text = (f"{ref.name}.{proto.default_method} ({fn.file}:{fn.first_line}) run with "
                f"{proto.layers_field}={n} and no configured ids" + (f"; {decided}" if decided else ""))
        value = outcome.writes.get(field)
        if value is None or is_unknown(value) or contains_unknown(value) or not isinstance(value, (list, tuple)):
            why = outcome.stopped.why if outcome.stopped else f"it does not write {field}"
            unknowns.append({"expr": f"{ref.name}.{proto.default_method}", "file": fn.file, "line": fn.first_line,
                             "why": why})
            steps.append(text + f"; {field} not known")
            continue
        line = outcome.write_lines.get(field, fn.first_line)
        steps.append(text + f"; writes {field} = {list(value)} (line {line})")
        values.append((ref, value, fn.file, line))
    if not values:
        for hop in (h for h in chain if h.kind == "setter"):
            unknowns.append({"expr": hop.qualname, "file": hop.file, "line": hop.line,
                             "why": f"the ids reach the model in the {proto.argument_parameter} argument, whose "
                                    f"default ({', '.join(proto.default_classes) or 'its class'}) could not be evaluated"})
        return
    ref, value, file, line = values[0]
    ids = sorted(int(v) for v in value)
    result["layers_to_capture"] = ids
    result["ids_written_by"] = f"{ref.name}.{proto.default_method}"
    # The hook runs after layer i: id i holds the output of layer i (id_shift 1), -1 the final output.
    result["effective_layers"] = effective = [i + proto.id_shift - 1 for i in ids]
    notes.append(f"with no ids configured the executor's metadata uses {ids} ({file}:{line}); each is the output of "
                 "that layer" + ("; -1 is the final output, captured only by the one-engine wrapper" if -1 in ids else ""))
    if draft.layer_ids is None:
        return
    trained = sorted(i + proto.id_shift - 1 for i in draft.layer_ids)
    if trained != sorted(effective):
        item = finding("fallback-triggered", "default-field", protocol=proto.name, entry=result.get("entry"),
                       file=file, line=line, owner_name=ref.name, method=proto.default_method,
                       field=proto.default_field, stored=ids, ids=list(draft.layer_ids), trained=trained,
                       effective=effective)
        result["findings"].append(finding_to_json(item))


__all__ = ["explain_argument"]
