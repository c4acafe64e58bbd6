"""The interpreter's values and its plain-data results (no evaluation here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------- values

MAX_WHY = 400  # characters of an Unknown's expression and reason


@dataclass(frozen=True)
class Unknown:
    """A value the interpreter could not compute; ``path`` is set when it is an
    unbound attribute chain such as ``self.language_model``."""

    expr: str
    why: str
    path: str | None = None

    def __post_init__(self) -> None:
        # A reason quoting the reason it depends on, each step of a loop: kept short, or
        # the messages alone grow quadratically with the steps (and so does the time).
        if len(self.why) > MAX_WHY:
            object.__setattr__(self, "why", self.why[: MAX_WHY - 3] + "...")
        if len(self.expr) > MAX_WHY:
            object.__setattr__(self, "expr", self.expr[: MAX_WHY - 3] + "...")

    def __repr__(self) -> str:
        return f"Unknown({self.expr!r}: {self.why})"


@dataclass(frozen=True)
class Obj:
    """An object known to exist (so ``is None`` is False) with a few known
    attributes and methods; used for sub-models the chain delegates to."""

    name: str
    attrs: tuple = ()  # ((name, value), ...)
    methods: frozenset = frozenset()
    closed: bool = False  # True when ``attrs`` lists every attribute that matters (others are absent)
    path: str | None = None  # where it lives on the model object ("self.model"), when known

    def attr(self, name: str) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        raise KeyError(name)


class _Absent:
    """Bound to a dotted name known not to exist (``hasattr`` is False)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


@dataclass(frozen=True)
class Call:
    """A call the function made on an attribute (or a free function)."""

    receiver: str | None  # dotted receiver, e.g. "self.language_model"; None for free functions
    method: str
    args: tuple
    kwargs: tuple  # ((name, value), ...)
    line: int
    source: str
    condition: str | None = None  # set when made inside a branch that could not be decided


@dataclass(frozen=True)
class Exit:
    """A ``return`` or ``raise`` that ended the function."""

    kind: str  # "return" | "raise"
    line: int
    condition: str | None  # source of the enclosing if-condition(s), None at top level
    source: str  # the statement's source


@dataclass(frozen=True)
class Branch:
    line: int
    condition: str
    taken: str  # "if" | "elif" | "else" | "none" | "unknown"
    value: Any = None


@dataclass(frozen=True)
class UnknownNote:
    expr: str
    line: int
    why: str
    affects_capture: bool = False  # it can change what a capture loop captures


@dataclass(frozen=True)
class Outcome:
    writes: Mapping[str, Any]
    calls: tuple
    returned_early: Exit | None
    raised: Exit | None
    return_value: Any
    branches: tuple
    unknowns: tuple
    complete: bool  # False when evaluation stopped at an undecidable branch
    stopped: UnknownNote | None = None
    write_lines: Mapping[str, int] = field(default_factory=dict)  # target -> line of its last write

    @property
    def ended_normally(self) -> bool:
        return self.complete and self.returned_early is None and self.raised is None


@dataclass(frozen=True)
class CaptureEvent:
    index: int  # the layer index i found in layers_to_capture
    line: int
    in_loop: bool  # False for a test outside the decoder loop (e.g. final-norm capture)
    condition: str | None = None  # undecidable condition it depends on
    # The layer whose OUTPUT this capture holds, by the model's own loop: a test after the
    # layer ran in this iteration holds that layer's output, one before it the previous
    # layer's (the input of this one). None: the usual reading, entry b = output of b - 1.
    output: int | None = None


@dataclass(frozen=True)
class CaptureResult:
    visited: tuple  # loop indices the decoder loop visits, in order
    captured: tuple  # layers_to_capture entries really hit, in order (each once per visit)
    events: tuple  # CaptureEvent
    never_visited: tuple  # entries of layers_to_capture that no test hit
    loop_line: int | None
    loop_source: str | None
    unknowns: tuple
    complete: bool
    tested_by: tuple = ()  # "list" (i in layers_to_capture) and/or "marker" (getattr(layer, marker, ...))
    outputs: tuple | None = None  # per captured entry, the layer whose output it holds (the model's convention)

    @property
    def captured_outputs(self) -> tuple:
        """The layers whose outputs are captured, by this model's loop: an entry tested before
        layer i runs holds the input of layer i (the output of i - 1, -1 = the embedding);
        one tested after layer i ran holds the output of layer i."""
        if self.outputs is not None and len(self.outputs) == len(self.captured):
            return tuple(self.outputs)
        return tuple(i - 1 for i in self.captured)

    @property
    def after_layer(self) -> bool:
        """True when some capture of this loop happens after the layer ran (its output)."""
        return self.outputs is not None and any(o != i - 1 for i, o in zip(self.captured, self.outputs, strict=False))



NOT_PLAIN = object()


def first_unknown(value: Any) -> Unknown | None:
    """The first Unknown in a value or inside a list/tuple/dict it holds."""
    if is_unknown(value):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    else:
        return None
    for item in items:
        found = first_unknown(item)
        if found is not None:
            return found
    return None


def contains_unknown(value: Any) -> bool:
    return first_unknown(value) is not None


def same_value(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and a == b
    except Exception:  # noqa: BLE001
        return False


def event_key(event: CaptureEvent) -> tuple:
    # The same index captured on both sides of an undecidable branch is captured either way.
    return (event.index, event.in_loop)


def with_condition(item: Any, condition: str) -> Any:
    if isinstance(item, (Call, CaptureEvent)) and item.condition is None:
        return type(item)(**{**item.__dict__, "condition": condition})
    return item


