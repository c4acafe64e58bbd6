"""Function sources for the interpreter, from the scan's own Project and Resolver:
the same file reading (coding cookies, BOM), the same class resolution (MRO
across modules) as every other stage; nothing is parsed a second way."""

from __future__ import annotations

import re
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

    def has_attribute(self, owner: str, name: str) -> bool | None:
        """``hasattr(self, name)`` on an instance of the class (dotted), read statically: True
        when the MRO defines the method, assigns ``self.<name>`` or binds it in a class body;
        False only when the MRO is complete, nothing binds it and no class sets attributes
        dynamically (``setattr``, ``__getattr__``: torch's ``nn.Module.__getattr__`` finds only
        what was assigned); None otherwise."""
        ref = self.class_ref(owner)
        if ref is None:
            return None
        if self.resolver.find_method(ref, name) is not None:
            return True
        classes, problems = self.resolver.mro(ref)
        if isinstance(self.resolver.attribute_types(ref, name, jedi=False), list):
            return True
        dynamic = False
        binds = re.compile(rf"^\s*(self\.)?{re.escape(name)}\s*(:[^=\n]*)?=(?!=)|setattr\(self,\s*[\"']{re.escape(name)}[\"']",
                           re.M)
        for cls in classes:
            body = self.class_body(cls)
            if body is None:
                return None
            if binds.search(body):
                return True
            dynamic = dynamic or "setattr(self" in body or "def __getattr__" in body
        return None if problems or dynamic else False

    def class_body(self, ref: ClassRef) -> str | None:
        """The source lines of a class statement: from its ``class`` line to the first later
        line indented no deeper than it (comments and blank lines aside)."""
        summary = self.project.module(ref.module)
        definition = summary.cls(ref.qualname) if summary is not None and not summary.error else None
        text = self.project.text(ref.module)
        if definition is None or text is None:
            return None
        lines = text.splitlines()
        start = definition.line - 1
        if not 0 <= start < len(lines):
            return None
        indent = len(lines[start]) - len(lines[start].lstrip())
        end = start
        while end < len(lines) - 1 and not lines[end].split("#", 1)[0].rstrip().endswith(":"):
            end += 1  # a header over several lines: `class A(\n    Base,\n):`
        end += 1
        while end < len(lines):
            line = lines[end]
            if line.strip() and not line.lstrip().startswith("#") and len(line) - len(line.lstrip()) <= indent:
                break
            end += 1
        return "\n".join(lines[start:end])

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
