"""`tracer explain` and `tracer scan --target-config/--draft-config`: the effective
layers of one model, from the scan's typed results and the scan's own sources."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracer.effective.configs import DraftConfig, TargetConfig, load_draft_config, load_target_config
from tracer.effective.convention import origin_pack
from tracer.effective.explain import explain_model
from tracer.effective.sources import Sources
from tracer.model.errors import UsageError
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import InputProblem, ModelResult, ScanResult
from tracer.present.scan_json import finding_from_json
from tracer.resolve.tree import open_project


def pick_protocol(result: ScanResult, packs: Sequence[Protocol], draft_raw: dict[str, Any],
                  architectures: tuple[str, ...], wanted: str | None = None) -> Protocol:
    """The pack a draft config is for: the one asked for, else the one whose draft
    architectures or id keys the config matches."""
    applied = [p for p in packs if p.name in result.protocols]
    if wanted:
        found = [p for p in applied if p.name == wanted]
        if not found:
            raise UsageError(f"protocol {wanted} does not apply to this tree (it has {', '.join(result.protocols)})")
        return found[0]
    by_arch = [p for p in applied if p.feeds_draft(architectures)]
    by_keys = [p for p in applied if any(_has_key(draft_raw, k) for k in p.draft_ids_keys)]
    for candidates in (by_arch and by_keys and [p for p in by_arch if p in by_keys], by_arch, by_keys):
        if candidates and len(candidates) == 1:
            return candidates[0]
    if len(applied) == 1:
        return applied[0]
    raise UsageError("cannot tell which protocol the draft config is for "
                     f"(architectures {list(architectures)}); pass --protocol ({', '.join(result.protocols)})")


def _has_key(data: dict[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def load_configs(protocol: Protocol, target_path: str | Path, draft_path: str | Path) -> tuple[TargetConfig, DraftConfig]:
    target = load_target_config(target_path, text_keys=protocol.target_text_config_keys)
    draft = load_draft_config(draft_path, ids_keys=protocol.draft_ids_keys, count_keys=protocol.draft_count_keys)
    return target, draft


def pick_model(result: ScanResult, target: TargetConfig, entry: str | None, protocol: str) -> ModelResult | None:
    """The scan model for ``entry`` (full or class name) or the target's architectures."""
    models = [m for m in result.models if m.protocol == protocol]
    wanted = [entry] if entry else list(target.architectures)
    for name in wanted:
        for model in models:
            if model.entry == name or model.entry.rsplit(".", 1)[-1] == name:
                return model
    return None


def explain(result: ScanResult, packs: Sequence[Protocol], target_path: str | Path, draft_path: str | Path,
            entry: str | None = None, pp: int = 1, protocol: str | None = None,
            cache_dir: str | Path | None = None, use_cache: bool = True,
            draft_framework: str | None = None) -> tuple[ModelResult | None, dict[str, Any]]:
    """(the model explained, explain's result) for the target config's architecture (or ``entry``).
    ``draft_framework`` names the framework whose convention the draft's ids were trained in."""
    from tracer.effective.configs import read_config_json

    draft_raw, architectures = read_config_json(draft_path, "draft config")
    if result.framework.fork_of:  # a fork: the packs as the scan relocated them
        packs = [p.relocated(result.framework.package_root) if p.framework == result.framework.name else p
                 for p in packs]
    proto = pick_protocol(result, packs, draft_raw, architectures, protocol)
    origin = origin_pack(draft_framework, packs, proto, architectures) if draft_framework else None
    target, draft = load_configs(proto, target_path, draft_path)
    model = pick_model(result, target, entry, proto.name)
    if model is None:
        return None, {"entry": entry or list(target.architectures), "protocol": proto.name}
    project, resolver = open_project(result.root, packs, cache_dir, use_cache)
    outcome = explain_model(Sources(project, resolver), model, result.call_sites, target, draft, proto, pp=pp,
                            origin=origin)
    outcome["protocol"] = proto.name
    outcome["scan"] = scan_says(model, result, proto)
    return model, outcome


def scan_says(model: ModelResult, result: ScanResult, proto: Protocol) -> dict[str, Any]:
    """What the scan found for this model, so explain never contradicts it: its verdict, why,
    its own findings, and for a model without the setter where start-up fails (the runner's
    calls of the setter)."""
    said: dict[str, Any] = {"verdict": model.verdict, "reason": model.reason,
                            "findings": [{"slug": f.slug, "severity": f.severity, "file": f.file, "line": f.line,
                                          "message": f.message} for f in model.findings if f.severity != "info"]}
    if model.graph_capture is not None:
        said["graph_capture"] = model.graph_capture
        said["graph_capture_site"] = model.graph_capture_site
    if model.verdict == "missing":
        said["fails_at"] = [f"{s.file}:{s.line}" for s in result.call_sites
                            if s.protocol == proto.name and s.passes_ids]
    return said


def annotate_scan(result: ScanResult, packs: Sequence[Protocol], target_path: str | Path, draft_path: str | Path,
                  cache_dir: str | Path | None = None, use_cache: bool = True, pp: int = 1,
                  entry: str | None = None, draft_framework: str | None = None) -> ScanResult:
    """The scan result whose model picked by the target config (or ``entry``) carries its
    effective layers, graph layers and explanation; its config findings join the findings."""
    model, outcome = explain(result, packs, target_path, draft_path, entry, pp, None, cache_dir, use_cache,
                             draft_framework)
    if model is None:
        problem = InputProblem(str(target_path), 1, f"no scanned entry class matches {outcome['entry']}")
        return dataclasses.replace(result, input_errors=result.input_errors + (problem,))
    chain = tuple(h.qualname for h in model.chain)
    extra: list[Finding] = [
        finding_from_json(dict(f, file=f["file"] or "", line=f["line"] or 0, col=1, chain=list(chain),
                               entries=[model.entry]))
        for f in outcome["findings"]]
    effective = outcome.get("effective_layers")
    graph = outcome.get("graph_layers") if outcome.get("graph_layers_differ") else None
    annotated = dataclasses.replace(
        model, effective_layers=tuple(effective) if effective is not None else None,
        graph_layers=tuple(graph) if graph is not None else None, explanation=outcome,
        findings=model.findings + tuple(extra))
    models = tuple(annotated if m is model else m for m in result.models)
    return dataclasses.replace(result, models=models, findings=result.findings + tuple(extra))
