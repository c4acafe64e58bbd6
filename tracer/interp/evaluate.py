"""The interpreter's public interface: evaluate a function, run a decoder loop."""

from __future__ import annotations

from tracer.interp.capture import captured_indices
from tracer.interp.interpreter import evaluate_function
from tracer.interp.values import (
    ABSENT,
    Branch,
    Call,
    CaptureEvent,
    CaptureResult,
    Exit,
    Obj,
    Outcome,
    Unknown,
    UnknownNote,
    contains_unknown,
    is_unknown,
)

__all__ = [
    "ABSENT", "Branch", "Call", "CaptureEvent", "CaptureResult", "Exit", "Obj", "Outcome", "Unknown", "UnknownNote",
    "captured_indices", "contains_unknown", "evaluate_function", "is_unknown",
]
