"""The effective-layers stage on a re-trace: with ``--target-config/--draft-config`` a fix of an
effective finding (offset-mismatch) is verified by re-evaluating the model the target config
picks on the re-traced project (the view's sources), as ``scan`` annotates it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tracer.effective.annotate import load_configs, pick_model, pick_protocol
from tracer.effective.configs import read_config_json
from tracer.effective.convention import origin_pack
from tracer.effective.explain import explain_model
from tracer.effective.sources import Sources
from tracer.model.protocol import Protocol
from tracer.present.scan_json import from_json


@dataclass(frozen=True)
class Configs:
    target: str
    draft: str
    pp: int = 1
    draft_framework: str | None = None


def effective_hook(configs: Configs, packs: Sequence[Protocol], present: Sequence[str]) -> Callable[[dict, dict], dict]:
    """A function (re-trace head, its kept project) -> the head with the effective findings added;
    ``present``: the protocols the scan found in the tree (the record's)."""

    def add(head: dict, keep: dict) -> dict:
        result = from_json({"root": "", "models": head["models"], "findings": head["findings"],
                            "call_sites": head["call_sites"], "protocols": list(present)})
        draft_raw, architectures = read_config_json(configs.draft, "draft config")
        proto = pick_protocol(result, packs, draft_raw, architectures, None)
        origin = origin_pack(configs.draft_framework, packs, proto, architectures) if configs.draft_framework \
            else None
        target, draft = load_configs(proto, configs.target, configs.draft)
        model = pick_model(result, target, None, proto.name)
        if model is None:
            return head  # the picked model is not among the re-traced entries: its findings are out of scope
        outcome = explain_model(Sources(keep["project"], keep["resolver"]), model, result.call_sites, target, draft,
                                proto, pp=configs.pp, origin=origin)
        chain = [h.qualname for h in model.chain]
        extra = [dict(f, file=f["file"] or "", line=f["line"] or 0, col=1, chain=chain, entries=[model.entry])
                 for f in outcome["findings"]]
        return dict(head, findings=head["findings"] + extra)

    return add
