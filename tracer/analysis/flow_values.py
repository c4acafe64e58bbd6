"""The values the flow works on, and what a method body does (plain data)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from tracer.resolve.resolver import ClassRef

if TYPE_CHECKING:
    from tracer.resolve.resolver import Resolver

# -- values ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Inst:
    """An instance of a class of the scanned tree."""

    cls: ClassRef
    how: str


@dataclass(frozen=True)
class ClassObj:
    cls: ClassRef


@dataclass(frozen=True)
class Ids:
    """The layer ids, or a value computed from them."""

    how: str = "the ids"


@dataclass(frozen=True)
class Carrier:
    """A config object that carries the ids as one of its attributes (``config.<attr>``);
    the pack's text-config keys (``config.text_config``) carry them too."""

    attr: str
    nested: tuple[str, ...] = ()
    how: str = "the config"


@dataclass(frozen=True)
class Const:
    value: object


@dataclass(frozen=True)
class Opaque:
    why: str
    rooted_at_self: bool = False  # an attribute path of the model object that could not be typed
    # (instance, attribute) typed without jedi: asked again with jedi only where the value
    # matters (a receiver of a call, the owner of a write), not for every expression
    retry: tuple | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Method:
    """A bound method looked up by name (``getattr(obj, "name")``), called later."""

    inst: Inst
    name: str
    source: str  # how the code wrote it, for messages
    line: int = 0  # where it was looked up (a missing name fails there: AttributeError)
    col: int = 0


Atom = Inst | ClassObj | Ids | Carrier | Const | Opaque | Method
Values = tuple[Atom, ...]
NONE: Values = (Const(None),)


def tainted(values: Iterable[Atom]) -> bool:
    return any(isinstance(v, Ids) for v in values)


def carries_config(values: Iterable[Atom]) -> bool:
    return any(isinstance(v, Carrier) for v in values)


def union_values(*groups: Values) -> Values:
    return tuple(dict.fromkeys(v for group in groups for v in group))


# -- what a body does ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Write:
    line: int
    col: int
    target: str  # source of the target, "self.model.layers_to_capture"
    owners: tuple[Inst, ...]  # classes of the object written to (empty: not typed)
    owner_why: str  # why the object could not be typed
    attr: str
    tainted: bool  # the stored value derives from the ids


@dataclass
class Call:
    """A call the flow resolved and (when it carries the ids) followed."""

    line: int
    col: int
    source: str  # "self.language_model.set_x"
    method: str
    owner: ClassRef  # class defining the method
    concrete: ClassRef  # the receiver's class (self inside the callee)
    how: str
    passes_ids: bool
    flow: Flow | None = None  # the callee's flow when followed


@dataclass(frozen=True)
class Problem:
    kind: str  # missing-method | guarded-missing | opaque-receiver | assert-fails | not-implemented | cycle | depth
    line: int
    col: int
    source: str
    detail: str
    receiver: str = ""
    method: str = ""
    suggestion: str = ""


@dataclass
class Flow:
    owner: ClassRef
    concrete: ClassRef
    method: str
    file: str
    line: int  # the def line
    col: int
    ids_param: str
    writes: list[Write] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    returns: Values = ()



def closest(name: str, choices: Iterable[str]) -> str:
    """The choice ``name`` is most likely a misspelling or an old name of, or "": a choice that
    swaps one of its words for an unlike one (``set_dflash_...`` for ``set_eagle3_...``) names
    another thing (another protocol's setter), never a suggestion."""
    pool = [c for c in choices if c != name and not _swaps_a_word(name, c)]
    found = difflib.get_close_matches(name, pool, n=1, cutoff=0.75)
    return found[0] if found else ""


def _swaps_a_word(name: str, other: str) -> bool:
    words, others = name.split("_"), other.split("_")
    for tag, a, b, c, d in difflib.SequenceMatcher(None, words, others).get_opcodes():
        if tag == "replace" and b - a == d - c and any(
                difflib.SequenceMatcher(None, x, y).ratio() < 0.5 for x, y in zip(words[a:b], others[c:d])):
            return True
    return False


class Env(dict):  # type: ignore[type-arg]
    """Locals of one path: name -> Values."""


class Evaluator(Protocol):
    """What a method body's evaluation asks of the analysis that runs it (flow.FlowAnalysis):
    the body and expression walkers are typed against this, so they never import the
    analysis that imports them."""

    resolver: Resolver
    carriers: set[str]

    def run(self, owner: ClassRef, concrete: ClassRef, name: str, args: list[Values] | None = None,
            kwargs: dict[str, Values] | None = None, ids_param: str = "", value_mode: bool = False
            ) -> Flow | None: ...

    def method_value(self, concrete: ClassRef, name: str) -> Values: ...

    def attribute(self, base: Values, attr: str) -> Values: ...

    def typed(self, values: Values) -> Values: ...
