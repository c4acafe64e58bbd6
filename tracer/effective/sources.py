"""Function sources for the interpreter, from the scan's own Project and Resolver:
the same file reading (coding cookies, BOM), the same class resolution (MRO
across modules) as every other stage; nothing is parsed a second way."""

from __future__ import annotations

from dataclasses import dataclass

from tracer.index.project import Project
from tracer.resolve.resolver import ClassRef, Resolver


class ExplainError(Exception):
    pass


@dataclass(frozen=True)
class FunctionSource:
    file: str  # relative to the scanned root
    name: str
    qualname: str  # Class.method (or function) inside its module
    source: str
    first_line: int
    last_line: int


class Sources:
    def __init__(self, project: Project, resolver: Resolver):
        self.project = project
        self.resolver = resolver

    def split(self, dotted: str) -> tuple[str, str] | None:
        """(module, qualname inside it) of a dotted name, by the longest module prefix."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if module in self.project.by_module:
                return module, ".".join(parts[cut:])
        return None

    def class_ref(self, dotted: str) -> ClassRef | None:
        found = self.split(dotted)
        if found is None:
            return None
        module, qualname = found
        summary = self.project.module(module)
        if summary is None or summary.cls(qualname) is None:
            return None
        return ClassRef(module, qualname)

    def function(self, module: str, qualname: str) -> FunctionSource | None:
        text = self.project.function_text(module, qualname)
        span = self.project.span(module, qualname)
        if text is None or span is None:
            return None
        source = self.project.by_module[module]
        return FunctionSource(source.path, qualname.rsplit(".", 1)[-1], qualname, text + "\n", span[0], span[1])

    def of_qualname(self, dotted: str) -> FunctionSource:
        """The function a hop names (``module.Class.method``)."""
        found = self.split(dotted)
        function = self.function(*found) if found else None
        if function is None:
            raise ExplainError(f"{dotted}: no such function in the scanned tree")
        return function

    def has_method(self, owner: str, method: str) -> bool | None:
        """Whether the class (dotted) or a base defines ``method``; None when its MRO is incomplete."""
        ref = self.class_ref(owner)
        if ref is None:
            return None
        if self.resolver.find_method(ref, method) is not None:
            return True
        _, problems = self.resolver.mro(ref)
        return None if problems else False

    def forwards(self, owner: str) -> list[FunctionSource]:
        """``forward`` of the class and of its bases, nearest first (a forward that calls
        ``super().forward`` leaves the loop to a base)."""
        ref = self.class_ref(owner)
        if ref is None:
            return []
        classes, _ = self.resolver.mro(ref)
        found = []
        for cls in classes:
            if self.resolver.method(cls, "forward") is not None:
                function = self.function(cls.module, f"{cls.qualname}.forward")
                if function is not None:
                    found.append(function)
        return found
