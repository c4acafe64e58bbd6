"""Resolve stage: names to definitions, class MROs, the methods a class defines or
inherits. The class of ``self.attr`` is attribute typing's (tracer/resolve/attributes.py,
which asks this lookup); the plain answers are in tracer/resolve/refs.py.

Every answer says how it was obtained (``how``) or why it could not be
(``why``); nothing is guessed. Modules are pulled from the Project on demand.
"""

from __future__ import annotations

import re

from tracer.bind.mro import after as mro_after
from tracer.bind.mro import linearize
from tracer.index.project import Project
from tracer.index.reads import Memo
from tracer.model.summary import ClassDef, Function
from tracer.resolve.attributes import AttributeTypes
from tracer.resolve.refs import ClassRef, Symbol, Typed, Untyped

MAX_DEPTH = 40  # re-export hops / MRO length bound (cycles and pathological trees)


class Resolver:
    def __init__(self, project: Project):
        self.project = project
        # memos that remember the modules behind each answer (a cached chain depends on them)
        self._mro_cache: Memo[tuple[list[ClassRef], list[str]]] = Memo(project.reads)
        self._names: Memo[Symbol] = Memo(project.reads)
        # factory function name -> (keyword naming the architecture, architecture -> class),
        # filled by the engine from a protocol's registry (a class picked by name at run time)
        self.registry_factories: dict[str, tuple[str, dict[str, ClassRef]]] = {}
        self.registry_class_keywords: set[str] = set()  # keywords of those factories that pass a class
        self.types = AttributeTypes(self)  # attribute typing (tracer/resolve/attributes.py) asks this lookup

    # -- definitions ---------------------------------------------------------------
    def class_def(self, ref: ClassRef) -> ClassDef | None:
        summary = self.project.module(ref.module)
        if summary is None:
            return None
        return summary.cls(ref.qualname)

    def resolve_name(self, module: str, dotted: str, depth: int = 0) -> Symbol:
        """What ``dotted`` (as written in ``module``) refers to (memoised)."""
        key = (module, dotted)
        found = self._names.get(key)
        if found is None:
            if depth == 0:
                # star imports already searched in this resolution: `a import *` of
                # `b import *` of `a ...` (or any dense web) is not searched again,
                # which was exponential (2**MAX_DEPTH paths for two cyclic stars).
                saved: set[tuple[str, str]] | None = getattr(self, "_stars_searched", None)
                self._stars_searched: set[tuple[str, str]] | None = set()
                try:
                    found = self._names.compute(key, lambda: self._resolve_name(module, dotted, depth))
                finally:
                    self._stars_searched = saved
            else:
                found = self._resolve_name(module, dotted, depth)
        return found

    def _resolve_name(self, module: str, dotted: str, depth: int = 0) -> Symbol:
        if not dotted:
            return Symbol("unknown", why="not a plain name")
        if depth > MAX_DEPTH:
            return Symbol("unknown", why=f"import cycle resolving {dotted}")
        summary = self.project.module(module)
        if summary is None:
            return Symbol("unknown", why=f"module {module} is not in the scanned tree")
        head, _, rest = dotted.partition(".")
        # Local definitions first (last definition wins, as at run time).
        for cls in reversed(summary.classes):
            if cls.qualname == head:
                return self._descend(Symbol("class", module, cls.qualname), rest, depth)
        function_names = [span[0] for span in summary.function_spans] or [f.name for f in summary.functions]
        if head in function_names:
            return Symbol("function", module, head) if not rest else Symbol("unknown", why=f"attribute of function {dotted}")
        for name, values, _ in reversed(summary.assignments):
            if name == head and len(values) == 1 and values[0] != head:
                return self._descend(self.resolve_name(module, values[0], depth + 1), rest, depth)
        # `import a.b.c` records "a.b.c" as a local name too; prefer the longest.
        best = None
        for imp in summary.imports:
            if dotted == imp.local or dotted.startswith(imp.local + "."):
                if best is None or len(imp.local) > len(best.local):
                    best = imp
        if best is not None:
            remainder = dotted[len(best.local) + 1:] if dotted != best.local else ""
            target = self.resolve_absolute(best.target, depth + 1)
            return self._descend(target, remainder, depth)
        searched = getattr(self, "_stars_searched", None)
        for star in summary.star_imports:
            if star in self.project.by_module and star != module:
                if searched is not None:
                    if (star, dotted) in searched:
                        continue
                    searched.add((star, dotted))
                found = self.resolve_name(star, dotted, depth + 1)
                if found.kind != "unknown":
                    return found
        if head in _BUILTINS:
            return Symbol("external", head)
        return Symbol("unknown", why=f"name {head!r} is not defined or imported in {module}")

    def resolve_absolute(self, target: str, depth: int = 0) -> Symbol:
        """``pkg.mod`` or ``pkg.mod.Name`` as an absolute import target."""
        if depth > MAX_DEPTH:
            return Symbol("unknown", why=f"import cycle resolving {target}")
        if target in self.project.by_module:
            return Symbol("module", target)
        parts = target.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:cut])
            if mod in self.project.by_module:
                return self.resolve_name(mod, ".".join(parts[cut:]), depth + 1)
        if parts[0] in self.project.top_packages:
            return Symbol("unknown", why=f"{target} is not in the scanned tree")
        return Symbol("external", target)

    def _descend(self, symbol: Symbol, rest: str, depth: int) -> Symbol:
        if not rest or symbol.kind in ("unknown", "external"):
            if symbol.kind == "external" and rest:
                return Symbol("external", f"{symbol.module}.{rest}")
            return symbol
        if symbol.kind == "module":
            return self.resolve_name(symbol.module, rest, depth + 1)
        if symbol.kind == "class":
            nested = f"{symbol.qualname}.{rest}"
            summary = self.project.module(symbol.module)
            if summary and summary.cls(nested):
                return Symbol("class", symbol.module, nested)
            return Symbol("unknown", why=f"attribute {rest} of class {symbol.qualname}")
        return Symbol("unknown", why=f"cannot look inside {symbol.fullname}")

    def resolve_class(self, module: str, dotted: str) -> ClassRef | Untyped:
        symbol = self.resolve_name(module, dotted)
        if symbol.kind == "class":
            return ClassRef(symbol.module, symbol.qualname)
        if symbol.kind == "external":
            return Untyped(f"{dotted} is defined outside the scanned tree ({symbol.module})", outside=True)
        if symbol.kind == "function":
            return Untyped(f"{dotted} is a function (a factory), not a class")
        return Untyped(symbol.why or f"cannot resolve {dotted}")

    # -- inheritance ---------------------------------------------------------------
    def mro(self, ref: ClassRef) -> tuple[list[ClassRef], list[str]]:
        """Python's C3 linearisation (``tracer.bind.mro``, the one the call-graph solver
        uses too), plus the problems that leave it incomplete: a base that could not be
        resolved inside the tree, a cycle, a class not found, an inconsistent order, a
        depth bound. (Bases outside the tree, such as torch's, are not problems: their
        methods are not ours.)"""
        return self._mro_cache.compute(ref, lambda: self._mro(ref, ()))

    def _mro(self, ref: ClassRef, stack: tuple[ClassRef, ...]) -> tuple[list[ClassRef], list[str]]:
        if ref in stack:
            return [ref], [f"inheritance cycle: {' -> '.join(c.name for c in stack + (ref,))}"]
        if len(stack) > MAX_DEPTH:
            return [ref], [f"inheritance deeper than {MAX_DEPTH} classes; stopped at {ref.name}"]
        cls = self.class_def(ref)
        if cls is None:
            return [ref], [f"class {ref.fullname} not found"]
        notes: list[str] = []
        bases: list[ClassRef] = []
        for base in cls.bases:
            if base in ("object", "nn.Module", "torch.nn.Module", "Module", "ABC", "Generic") or base.startswith("Generic["):
                continue
            if "[" in base and base.split("[", 1)[0].replace(".", "").isidentifier():
                base = base.split("[", 1)[0]  # a generic alias (`VllmModel[T]`): the class it subscripts
            resolved = self.resolve_class(ref.module, base)
            if isinstance(resolved, Untyped):
                if not resolved.outside:
                    notes.append(f"base {base} of {ref.name}: {resolved.why}")
                continue
            if resolved not in bases and resolved != ref:
                bases.append(resolved)
        inner = stack + (ref,)
        base_mros = {b: self._mro(b, inner) if b in inner else self.mro_within(b, inner) for b in bases}
        for _, base_notes in base_mros.values():
            notes.extend(n for n in base_notes if n not in notes)
        order, consistent = linearize(ref, bases, lambda b: base_mros[b][0])
        if not consistent:
            notes.append(f"the bases of {ref.name} admit no consistent method resolution order (Python refuses the class)")
        return order, notes

    def mro_within(self, ref: ClassRef, stack: tuple[ClassRef, ...]) -> tuple[list[ClassRef], list[str]]:
        """A base's MRO while linearising a subclass: the memo unless a cycle is open."""
        if not stack:
            return self.mro(ref)
        return self._mro_cache.compute(ref, lambda: self._mro(ref, stack))

    def method_names(self, ref: ClassRef) -> list[str]:
        cls = self.class_def(ref)
        if cls is None:
            return []
        return [span[0] for span in cls.method_spans] or [m.name for m in cls.methods]

    def method_names_in_mro(self, ref: ClassRef) -> list[str]:
        classes, _ = self.mro(ref)
        return list(dict.fromkeys(name for cls in classes for name in self.method_names(cls)))

    def method(self, ref: ClassRef, name: str) -> Function | None:
        """The summary of ``ref``'s own method ``name`` (parsed on first use)."""
        if name not in self.method_names(ref):
            return None
        return self.project.function(ref.module, f"{ref.qualname}.{name}")

    def methods_mentioning(self, ref: ClassRef, *words: str, pattern: re.Pattern | None = None) -> list[Function]:
        """Own methods whose source text contains any of ``words`` (or matches
        ``pattern``): a text test first, so only those few are parsed."""
        found = []
        for name in dict.fromkeys(self.method_names(ref)):
            text = self.project.function_text(ref.module, f"{ref.qualname}.{name}")
            if text is None or any(w in text for w in words) or (pattern is not None and pattern.search(text)):
                method = self.project.function(ref.module, f"{ref.qualname}.{name}")
                if method is not None:
                    found.append(method)
        return found

    def find_method(self, ref: ClassRef, name: str, after: ClassRef | None = None
                    ) -> tuple[ClassRef, Function] | None:
        """The class in ref's MRO that defines ``name`` (optionally after ``after``)."""
        classes, _ = self.mro(ref)
        if after is not None:
            classes = mro_after(classes, after)
        for cls in classes:
            method = self.method(cls, name)
            if method is not None:
                return cls, method
        return None

    def methods_in_mro(self, ref: ClassRef, mentioning: str) -> list[tuple[ClassRef, Function]]:
        """Every method (first definition wins) of ref's MRO whose text mentions a word;
        a method overridden lower in the MRO hides the base's."""
        found: dict[str, tuple[ClassRef, Function] | None] = {}
        classes, _ = self.mro(ref)
        for cls in classes:
            names = self.method_names(cls)
            mentioning_methods = {m.name: m for m in self.methods_mentioning(cls, mentioning)}
            for name in names:
                if name in found and found[name] is not None:
                    continue
                if name in mentioning_methods:
                    found[name] = (cls, mentioning_methods[name])
                elif name not in found:
                    # An override hides the base's method unless it calls it.
                    text = self.project.function_text(cls.module, f"{cls.qualname}.{name}") or ""
                    calls_base = f"super().{name}(" in text or f".{name}(self" in text
                    found[name] = None if not calls_base else found.get(name)
                    if calls_base:
                        found.pop(name, None)
        return [v for v in found.values() if v is not None]

    # -- attribute types (tracer/resolve/attributes.py) --------------------------------
    def attribute_types(self, concrete: ClassRef, attr: str, jedi: bool = True) -> list[Typed] | Untyped:
        """Possible classes of ``self.<attr>`` on an instance of ``concrete`` (``jedi``: ask it
        where the tree's own assignments do not tell)."""
        return self.types.attribute_types(concrete, attr, jedi)

    def receiver_types(self, concrete: ClassRef, receiver: str, jedi: bool = True) -> list[Typed] | Untyped:
        """Classes of a receiver path such as ``self.language_model.model``."""
        return self.types.receiver_types(concrete, receiver, jedi)

    @property
    def jedi_questions(self) -> int:
        """Attributes the tree's own assignments could not type, asked of jedi."""
        return self.types.jedi_questions

    @property
    def jedi_answers(self) -> int:
        """Of those, the ones jedi named a class of the tree for."""
        return self.types.jedi_answers


_BUILTINS = {
    "object", "int", "str", "list", "dict", "tuple", "set", "float", "bool", "type", "super",
    "getattr", "setattr", "hasattr", "len", "range", "print", "isinstance", "Exception",
    "ValueError", "TypeError", "RuntimeError", "AttributeError", "NotImplementedError",
}


__all__ = ["MAX_DEPTH", "ClassRef", "Resolver", "Symbol", "Typed", "Untyped"]
