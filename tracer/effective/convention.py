"""A draft trained on another framework's capture convention (``explain --draft-framework``).

What an id means is a pack's ``id_shift`` (1: id i names the output of layer i, SGLang;
0: the input of layer i, the output of layer i-1, vLLM and LMDeploy). A draft's
``config.json`` does not say which framework trained it (SpecForge writes SGLang's ids,
vLLM's speculators vLLM's), so the user names it, and the check compares the outputs the
draft was trained on (the origin pack's meaning) with the outputs this tree's model really
captures for the same ids (its setter and its own loop, evaluated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from tracer.config.packs import builtin_protocols
from tracer.model.errors import UsageError
from tracer.model.protocol import Protocol


def meaning(shift: int) -> str:
    """What id i names under a pack's ``id_shift``, in words."""
    if shift == 1:
        return "the output of layer i"
    if shift == 0:
        return "the input of layer i (the output of layer i-1)"
    return f"the output of layer i{shift - 1:+d}"


def origin_pack(framework: str, packs: Sequence[Protocol], proto: Protocol,
                architectures: tuple[str, ...]) -> Protocol:
    """The pack of ``framework`` whose convention the draft was trained on: the one that
    feeds the draft's architectures, else the one for the same protocol kind as ``proto``
    (``sglang-eagle3`` for ``vllm-eagle3``), else the only one."""
    known: dict[str, Protocol] = {}
    for pack in [*packs, *builtin_protocols()]:
        known.setdefault(pack.name, pack)
    candidates = [p for p in known.values() if p.framework == framework]
    if not candidates:
        frameworks = ", ".join(sorted({p.framework for p in known.values()}))
        raise UsageError(f"--draft-framework {framework}: no protocol pack describes that framework "
                         f"(known: {frameworks})")
    kind = proto.name.split("-", 1)[-1]
    for chosen in ([p for p in candidates if p.feeds_draft(architectures)],
                   [p for p in candidates if p.name.split("-", 1)[-1] == kind], candidates):
        if len(chosen) == 1:
            return chosen[0]
    shifts = {p.id_shift for p in candidates}
    if len(shifts) == 1:
        return candidates[0]
    raise UsageError(f"--draft-framework {framework}: its packs ({', '.join(p.name for p in candidates)}) "
                     "read ids differently and none is for this draft; pass --protocol")


class ConventionMismatch(NamedTuple):
    """The convention-mismatch finding's fields (the catalogue's template names them)."""

    ids: list[int]  # the draft's ids
    origin: str  # the framework they were trained in
    origin_meaning: str
    trained: list[int]  # the layer outputs the draft was trained on
    here: str  # this tree's framework
    here_meaning: str
    effective: list[int]  # the outputs this model captures with those ids
    how_far: str
    use: str  # the fix


def convention_fields(origin: Protocol, proto: Protocol, ids: list[int],
                      effective: list[int] | None) -> ConventionMismatch | None:
    """The convention-mismatch finding's fields, or None when the draft's ids capture the
    outputs it was trained on (or what is captured is not known)."""
    if effective is None or len(effective) != len(ids):
        return None
    trained = sorted(i + origin.id_shift - 1 for i in ids)
    got = sorted(effective)
    if got == trained:
        return None
    deltas = {g - t for g, t in zip(got, trained, strict=True)}
    if deltas == {-1}:
        how_far = "every captured layer is one layer early"
    elif deltas == {1}:
        how_far = "every captured layer is one layer late"
    elif len(deltas) == 1:
        how_far = f"every captured layer is {abs(deltas.pop())} layers off"
    else:
        how_far = "they differ"
    # the ids that capture the trained outputs here, where this model reads ids by a constant shift
    if len({g - i for g, i in zip(got, sorted(ids), strict=True)}) == 1:
        offset = got[0] - sorted(ids)[0]
        use = f"give {proto.framework} the ids {[t - offset for t in trained]} (the outputs of layers {trained})"
    else:
        use = f"give {proto.framework} ids that capture the outputs of layers {trained}"
    return ConventionMismatch(list(ids), origin.framework, meaning(origin.id_shift), trained, proto.framework,
                              meaning(proto.id_shift), got, how_far, use)


__all__ = ["ConventionMismatch", "convention_fields", "meaning", "origin_pack"]
