"""Capture per forward branch: a forward that captures on one branch and runs the
layers without capture on another (a two-batch-overlap path, a fused path)
keeps its verdict, and gets a warning naming the condition, so the user knows
which server options lose the aux states."""

from __future__ import annotations

import dataclasses

from tracer.checks import finding, on_draft_head
from tracer.index.branches import skipped_branches
from tracer.index.project import Project
from tracer.model.errors import InputError
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.model.results import ModelResult
from tracer.model.summary import SkippedBranch


class BranchCheck:
    def __init__(self, project: Project, proto: Protocol):
        self.project = project
        self.proto = proto
        self._seen: dict[tuple[str, str, tuple[str, ...]], tuple[SkippedBranch, ...]] = {}

    def _split(self, qualname: str) -> tuple[str, str] | None:
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.project.by_module:
                return module, ".".join(parts[cut:])
        return None

    def _branches(self, module: str, qualname: str, names: tuple[str, ...]) -> tuple[SkippedBranch, ...]:
        key = (module, qualname, names)
        self.project.reads.touch(module)
        if key not in self._seen:
            found: tuple[SkippedBranch, ...] = ()
            span = self.project.span(module, qualname)
            text = self.project.text(module)
            if span is not None and text is not None:
                try:
                    found = skipped_branches(text, span[0], span[1], names)
                except InputError:
                    found = ()
            self._seen[key] = found
        return self._seen[key]

    def findings(self, model: ModelResult) -> list[Finding]:
        if model.verdict not in ("ok", "broken"):
            return []
        names = tuple(dict.fromkeys((model.state_attribute or self.proto.state_attribute,
                                     *self.proto.state_markers)))
        found = []
        chain = tuple(h.qualname for h in model.chain)
        # A call of a helper the chain reads the state in counts as a read (vLLM's
        # self._maybe_add_hidden_state(aux, idx + 1, ...) in the decoder loop).
        helpers = tuple(dict.fromkeys(h.qualname.rsplit(".", 1)[-1] for h in model.chain if h.kind == "read"))
        helpers = tuple(h for h in helpers if h not in self.proto.forward_methods)
        for hop in model.chain:
            if hop.kind != "read":
                continue
            where = self._split(hop.qualname)
            if where is None:
                continue
            module, qualname = where
            for branch in self._branches(module, qualname, names + helpers):
                item = finding(
                    "capture-skipped-on-branch", "", protocol=self.proto.name, entry=model.entry, file=hop.file,
                    line=branch.line, col=branch.col, chain=chain, setter=self.proto.setter,
                    method=".".join(qualname.split(".")[-2:]), condition=branch.condition, runs=branch.runs,
                    runs_line=branch.runs_line, attribute=names[0])
                found.append(on_draft_head(item, self.proto.setter) if model.draft else item)
        return found


def with_branch_findings(check: BranchCheck, model: ModelResult) -> ModelResult:
    extra = check.findings(model)
    if not extra:
        return model
    return dataclasses.replace(model, findings=tuple(sorted(set(model.findings) | set(extra), key=Finding.sort_key)))


__all__ = ["BranchCheck", "with_branch_findings"]
