"""Pipeline stages: each rank's layer range, by evaluating the release's own stage function."""

from __future__ import annotations

from tracer.effective.sources import Sources
from tracer.interp.evaluate import evaluate_function, is_unknown
from tracer.model.protocol import Protocol


def stage_ranges(sources: Sources, protocol: Protocol, num_layers: int, pp: int,
                 environ: dict | None = None) -> tuple:
    """[(start, end)] per pipeline rank, computed by evaluating the release's own
    stage function (the pack's ``pp_indices_function``, so the version's remainder
    rule is used); (None, why) when it cannot."""
    if pp == 1:
        return [(0, num_layers)], None
    name = protocol.pp_indices_function
    found = sources.split(name) if name else None
    fn = sources.function(*found) if found else None
    if fn is not None:
        relative = fn.file
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
                return None, f"{fn.name} ({relative}:{fn.first_line}) could not be evaluated for rank {rank}: {why}"
            ranges.append(tuple(value))
        return ranges, f"{relative}:{fn.first_line} {fn.name} with no layer-partition override in the environment"
    return None, f"{name or 'the stage function (effective.pp_indices_function)'} was not found in the scanned tree"
