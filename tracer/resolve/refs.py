"""The resolve stage's plain answers: a class of the tree, what a name refers to, one possible
class of an attribute (and how it was found), or why none could be; and the lookups
attribute typing asks of name resolution (``Lookup``, the Resolver's interface to it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from tracer.index.project import Project
from tracer.model.summary import ClassDef, Function


@dataclass(frozen=True)
class ClassRef:
    module: str
    qualname: str

    @property
    def fullname(self) -> str:
        return f"{self.module}.{self.qualname}"

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Symbol:
    kind: str  # "class" | "function" | "module" | "external" | "unknown"
    module: str = ""
    qualname: str = ""
    why: str = ""  # for "unknown"

    @property
    def fullname(self) -> str:
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


@dataclass(frozen=True)
class Typed:
    """One possible class of an attribute, and how it was found."""

    cls: ClassRef
    how: str


class OutsideReason(str):
    """A reason an attribute is untyped that no inference can overturn: the value is built
    outside the scanned tree, or a registry factory picks its class from the run-time config
    (no literal name). jedi is not asked about these (on the real releases it named no class
    for them, at ~1 CPU-s of a cold scan)."""


def outside_reason(text: str, result: object) -> str:
    return OutsideReason(text) if getattr(result, "outside", False) else text


@dataclass(frozen=True)
class Untyped:
    why: str
    outside: bool = False  # the name is defined outside the scanned tree (torch, the standard library)


class Lookup(Protocol):
    """What attribute typing asks of name resolution and the MRO (the Resolver)."""

    project: Project
    registry_factories: dict[str, tuple[str, dict[str, ClassRef]]]
    registry_class_keywords: set[str]

    def class_def(self, ref: ClassRef) -> ClassDef | None: ...
    def resolve_name(self, module: str, dotted: str, depth: int = 0) -> Symbol: ...
    def resolve_absolute(self, target: str, depth: int = 0) -> Symbol: ...
    def resolve_class(self, module: str, dotted: str) -> ClassRef | Untyped: ...
    def mro(self, ref: ClassRef) -> tuple[list[ClassRef], list[str]]: ...
    def method(self, ref: ClassRef, name: str) -> Function | None: ...
    def methods_mentioning(self, ref: ClassRef, *words: str, pattern: re.Pattern | None = None) -> list[Function]: ...
    def find_method(self, ref: ClassRef, name: str, after: ClassRef | None = None
                    ) -> tuple[ClassRef, Function] | None: ...
