"""What explain binds before it runs a hop, from the scan's classes: the objects a hop
delegates to, and the answers to the questions a setter asks about itself
(``hasattr(self, "m")``, ``hasattr(self.X, "m")``, ``getattr(self, "model", self)``); and
which read helpers a forward's loop runs in place."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tracer.effective.sources import ExplainError, Sources
from tracer.interp.evaluate import ABSENT, Obj
from tracer.model.results import Hop

_CALL_RE = r"(self(?:\.\w+)+)\.{method}\s*\("


def delegation_receivers(source: str, method: str) -> list[str]:
    """The ``self.X`` paths a source calls ``method`` on."""
    return list(dict.fromkeys(re.findall(_CALL_RE.format(method=re.escape(method)), source)))


def bind_self_queries(env: dict[str, Any], sources: Sources, source: str, concrete: str, next_hop: Hop | None,
                      chain_hops: Sequence[Hop], state_attribute: str) -> None:
    """Bind in ``env`` what the hop's ``source`` (running on an instance of ``concrete``) asks."""
    next_method = next_hop.qualname.rsplit(".", 1)[-1] if next_hop else None
    if next_hop is not None and next_method:
        for receiver in delegation_receivers(source, next_method):
            env[receiver] = Obj(next_hop.qualname.rsplit(".", 2)[-2], methods=frozenset({next_method}))
    # `hasattr(self.X, "m")` on the object the state is written to: answered from
    # the write hop's class (and its bases, by name), or left unknown.
    owner = next((h.qualname.rsplit(".", 1)[0] for h in chain_hops if h.kind == "write"), None)
    for receiver, method in re.findall(r'hasattr\(\s*(self(?:\.\w+)+)\s*,\s*["\'](\w+)["\']\s*\)', source):
        if receiver in env or f"{receiver}.{method}" in env or not owner:
            continue
        if not re.search(re.escape(receiver) + r"\." + re.escape(state_attribute) + r"\s*=", source):
            continue
        has = sources.has_method(owner, method)
        if has is not None:
            env[f"{receiver}.{method}"] = "method" if has else ABSENT
    # `hasattr(self, "m")` (vLLM's interface setter asks which holder to use): answered
    # from the class the hop runs on, the entry class for the first hop
    for name in dict.fromkeys(re.findall(r'hasattr\(\s*self\s*,\s*["\'](\w+)["\']\s*\)', source)):
        if f"self.{name}" not in env:
            has = sources.has_attribute(concrete, name)
            if has is not None:
                env[f"self.{name}"] = Obj(f"self.{name}") if has else ABSENT
    # `getattr(x, "model", x)` picks the holder the next hop runs on: the attribute is the
    # next hop's object when the class assigns it, absent when it provably does not
    if next_hop is not None and next_method:
        for attr in dict.fromkeys(re.findall(r'getattr\(\s*\w+\s*,\s*["\'](\w+)["\']\s*,', source)):
            if f"self.{attr}" in env:
                continue
            has = sources.has_attribute(concrete, attr)
            if has:
                env[f"self.{attr}"] = Obj(next_hop.qualname.rsplit(".", 2)[-2], methods=frozenset({next_method}),
                                          path=f"self.{attr}")
            elif has is False:
                env[f"self.{attr}"] = ABSENT


def capture_helpers(sources: Sources, reads: Sequence[Hop], state_attribute: str) -> dict[str, tuple[str, int]]:
    """Read helpers the forward calls in its loop (``self._maybe_add_hidden_state(aux, i + 1, ...)``),
    to run in place: a read without a loop of its own that tests the state (one with a loop is a
    forward)."""
    helpers: dict[str, tuple[str, int]] = {}
    for hop in reads:
        name = hop.qualname.rsplit(".", 1)[-1]
        try:
            function = sources.of_qualname(hop.qualname)
        except ExplainError:
            continue
        if (name != "forward" and re.search(rf"\bin\s+self\.{re.escape(state_attribute)}\b", function.source)
                and not re.search(r"^\s*(async\s+)?for\s", function.source, re.M)):
            helpers[name] = (function.source, function.first_line)
    return helpers
