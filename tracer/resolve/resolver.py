"""Resolve stage: names to definitions, class MROs, the class of ``self.attr``.

Every answer says how it was obtained (``how``) or why it could not be
(``why``); nothing is guessed. Modules are pulled from the Project on demand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracer.bind.mro import after as mro_after
from tracer.bind.mro import linearize
from tracer.index.project import Project
from tracer.index.reads import Memo
from tracer.model.summary import ClassDef, Function
from tracer.resolve.jedi_fallback import JediFallback

MAX_DEPTH = 40  # re-export hops / MRO length bound (cycles and pathological trees)


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


class _OutsideReason(str):
    """A reason an attribute is untyped that no inference can overturn: the value is built
    outside the scanned tree, or a registry factory picks its class from the run-time config
    (no literal name). jedi is not asked about these (on the real releases it named no class
    for them, at ~1 CPU-s of a cold scan)."""


def _reason(text: str, result: object) -> str:
    return _OutsideReason(text) if getattr(result, "outside", False) else text


@dataclass(frozen=True)
class Untyped:
    why: str
    outside: bool = False  # the name is defined outside the scanned tree (torch, the standard library)


class Resolver:
    def __init__(self, project: Project):
        self.project = project
        # memos that remember the modules behind each answer (a cached chain depends on them)
        self._mro_cache: Memo[tuple[list[ClassRef], list[str]]] = Memo(project.reads)
        self._names: Memo[Symbol] = Memo(project.reads)
        self.jedi: JediFallback | None = None  # created on first need
        self.jedi_questions = 0  # the fallback counted: questions asked, classes named
        self.jedi_answers = 0
        self._jedi_asked: Memo[list[Typed]] = Memo(project.reads)  # one question once a run
        # factory function name -> (keyword naming the architecture, architecture -> class),
        # filled by the engine from a protocol's registry (a class picked by name at run time)
        self.registry_factories: dict[str, tuple[str, dict[str, ClassRef]]] = {}
        self.registry_class_keywords: set[str] = set()  # keywords of those factories that pass a class

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

    # -- attribute types -------------------------------------------------------------
    def attribute_types(self, concrete: ClassRef, attr: str, jedi: bool = True) -> list[Typed] | Untyped:
        """Possible classes of ``self.<attr>`` on an instance of ``concrete`` (``jedi``: ask it
        where the tree's own assignments do not tell)."""
        classes, _ = self.mro(concrete)
        typed: list[Typed] = []
        reasons: list[str] = []
        for owner in classes:
            definition = self.class_def(owner)
            if definition is None:
                continue
            for ann_name, ann_type in definition.annotations:
                if ann_name == attr and ann_type:
                    result = self.resolve_class(owner.module, ann_type)
                    if isinstance(result, ClassRef):
                        typed.append(Typed(result, f"class annotation ({attr}: {ann_type})"))
            assigns = re.compile(rf"self\.{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)")
            for method in self.methods_mentioning(owner, pattern=assigns):
                for write in method.writes:
                    if write.target != f"self.{attr}":
                        continue
                    for callee in write.value_calls:
                        self._type_from_callee(concrete, owner, method, callee, write.line, attr, typed, reasons)
                    if not write.value_calls:
                        self._type_from_value(concrete, owner, method, write.value_src, attr, typed, reasons)
            if typed:
                break  # the most derived class that assigns the attribute decides
        unique: dict[ClassRef, Typed] = {}
        for t in typed:
            unique.setdefault(t.cls, t)
        if unique:
            return list(unique.values())
        if jedi and reasons and not all(isinstance(r, _OutsideReason) for r in reasons):
            # jedi can only name a class of the tree where a value is built inside it: a
            # torch.zeros(...) or nn.Linear(...) is no class of ours, whatever jedi says
            jedi_typed = self._jedi_types(classes, attr)
            if jedi_typed:
                return jedi_typed
            return Untyped("; ".join(dict.fromkeys(reasons)))
        if reasons:
            return Untyped("; ".join(dict.fromkeys(reasons)))
        prop = self._property_types(concrete, attr)
        if prop is not None:
            return prop
        return Untyped(f"no assignment of self.{attr} found in {concrete.name} or its bases")

    def _jedi_types(self, classes: list[ClassRef], attr: str) -> list[Typed]:
        """Ask jedi (time-bounded) about ``self.<attr> = ...`` writes the resolver could not type
        (each question once a run: a chain per entry class asked the same one up to six times)."""
        return self._jedi_asked.compute((tuple(classes), attr), lambda: self._ask_jedi(classes, attr))

    def _ask_jedi(self, classes: list[ClassRef], attr: str) -> list[Typed]:
        self.jedi_questions += 1
        found = self._jedi_answer(classes, attr)
        self.jedi_answers += bool(found)
        return found

    def _jedi_answer(self, classes: list[ClassRef], attr: str) -> list[Typed]:
        if self.jedi is None:
            from pathlib import Path

            some = next(iter(self.project.by_module.values()), None)
            if some is None:
                return []
            depth = len(some.module.split(".")) + (1 if some.is_package else 0)
            self.jedi = JediFallback(Path(some.abspath).parents[depth - 1])
        assigns = re.compile(rf"self\.{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)")
        for owner in classes:
            for method in self.methods_mentioning(owner, pattern=assigns):
                for write in method.writes:
                    if write.target != f"self.{attr}" or _literal(write.value_src):
                        continue  # a literal (None, a number) is no class of the tree, whatever jedi says
                    source = self.project.by_module.get(owner.module)
                    text = self.project.text(owner.module)
                    if source is None or text is None:
                        continue
                    from tracer.index.cache import entry_key

                    key = entry_key(text.encode(), owner.module, f"{write.line}:{write.col}", "jedi")
                    names = self.project.cache.get_json(key)
                    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                        names = None  # absent, or not an entry of ours
                    if names is None:
                        jedi = self.jedi
                        assert jedi is not None
                        names = jedi.infer_attribute(text, source.abspath, write.line, write.col + len("self."))
                        if jedi.calls_made_answer:
                            self.project.cache.put_json(key, names)
                    typed = []
                    for full_name in names:
                        if full_name.startswith("__main__."):
                            # jedi names the asked file's own module "__main__" (the tree is kept
                            # off its sys.path, so it cannot name the package): it is owner's module
                            full_name = owner.module + full_name[len("__main__"):]
                        symbol = self.resolve_absolute(full_name)
                        if symbol.kind == "class":
                            typed.append(Typed(ClassRef(symbol.module, symbol.qualname),
                                               f"jedi inference of self.{attr} ({owner.name}.{method.name}:{write.line})"))
                    if typed:
                        return typed
        return []

    def _property_types(self, concrete: ClassRef, attr: str, depth: int = 0) -> list[Typed] | None:
        """``@property def attr(self): return self._attr`` (or ``return Cls(...)``)."""
        found = self.find_method(concrete, attr)
        if found is None or depth > 3:
            return None
        owner, method = found
        typed: list[Typed] = []
        for value in method.returns:
            if value.startswith("=self.") and value.count(".") == 1:
                inner = self.attribute_types(concrete, value[6:])
                if isinstance(inner, list):
                    typed.extend(Typed(t.cls, f"property {owner.name}.{attr} returns self.{value[6:]}; {t.how}")
                                 for t in inner)
            elif not value.startswith("="):
                result = self.resolve_class(owner.module, value)
                if isinstance(result, ClassRef):
                    typed.append(Typed(result, f"property {owner.name}.{attr} returns {value}(...)"))
        return typed or None

    def _type_from_callee(self, concrete, owner, method, callee, line, attr, typed, reasons) -> None:
        if callee.startswith("<"):
            reasons.append(f"self.{attr} is built by a {callee[1:-1]} expression ({owner.name}.{method.name}:{line})")
            return
        params = {p.name: p for p in method.params}
        if callee in params:
            value, how = self._parameter_value(concrete, owner, method, callee)
            if value is None:
                reasons.append(f"self.{attr} is built from constructor parameter {callee!r} with no default")
                return
            module, name = value
            result = self.resolve_class(module, name)
            if isinstance(result, ClassRef):
                typed.append(Typed(result, how))
            else:
                reasons.append(_reason(f"self.{attr} = {callee}(...): {result.why}", result))
            return
        if callee.startswith("self.") and callee.count(".") == 1:
            self._type_from_self_callee(concrete, callee[5:], attr, typed, reasons)
            return
        for local, value in method.local_types:
            if local == callee and value.startswith("="):
                callee = value[1:]
                break
            if local == callee:
                # `arch = self.get_arch(config); self.model = arch(...)`: the class is a value
                # computed at run time, not a name the tree defines
                reasons.append(f"self.{attr} = {callee}(...), where {callee} is a local variable set from "
                               f"{value}(...) ({owner.name}.{method.name}): the class is chosen at run time")
                return
        if callee.rpartition(".")[2] in self.registry_factories:
            self._type_from_registry(owner, method, callee, line, attr, typed, reasons)
            return
        symbol = self.resolve_name(owner.module, callee)
        if symbol.kind == "function":
            factory = self.project.function(symbol.module, symbol.qualname)
            self._type_from_returns(concrete, ClassRef(symbol.module, ""), factory, f"factory {callee}()",
                                    attr, typed, reasons)
            return
        result = self.resolve_class(owner.module, callee)
        if isinstance(result, ClassRef):
            typed.append(Typed(result, f"attribute type from {owner.name}.{method.name} (self.{attr} = {callee}(...))"))
        else:
            reasons.append(_reason(f"self.{attr} = {callee}(...): {result.why}", result))

    def _type_from_registry(self, owner, method, callee, line, attr, typed, reasons) -> None:
        """``self.x = build(..., architectures=["Arch"])``: the registry's class for Arch."""
        keyword, table = self.registry_factories[callee.rpartition(".")[2]]
        calls = [c for c in method.calls if c.func == callee and line <= c.line <= line + 3]
        # A class passed by name (`model_class=Cls`) decides over the architecture name.
        for key, value in (calls[0].kwargs if calls else ()):
            if key in self.registry_class_keywords:
                result = self.resolve_class(owner.module, value)
                if isinstance(result, ClassRef):
                    typed.append(Typed(result, f"{callee}({key}={value})"))
                    return
        names = [re.findall(r"[\"']([^\"']+)[\"']", value) for call in calls[:1]
                 for key, value in call.kwargs if key == keyword]
        names = names[0] if names else []
        if not names:
            reasons.append(_OutsideReason(f"self.{attr} = {callee}(...) without a literal {keyword}=[...]: the "
                                          "class is chosen from the runtime config"))
            return
        for name in names:
            if isinstance(name, str) and name in table:
                typed.append(Typed(table[name], f"registry class of {name} ({callee}({keyword}=[{name!r}]))"))
            else:
                reasons.append(f"self.{attr} = {callee}({keyword}=[{name!r}]): {name} is not in the registry")

    def _type_from_self_callee(self, concrete, name, attr, typed, reasons) -> None:
        """``self.x = self.make(...)`` (factory method, possibly overridden) or
        ``self.x = self.cls_attr(...)`` (class attribute naming a class)."""
        classes, _ = self.mro(concrete)
        for cls in classes:
            definition = self.class_def(cls)
            if definition is None:
                continue
            for attr_name, value in definition.class_attrs:
                if attr_name == name:
                    result = self.resolve_class(cls.module, value)
                    if isinstance(result, ClassRef):
                        typed.append(Typed(result, f"class attribute {cls.name}.{name} = {value}"))
                    else:
                        reasons.append(f"self.{attr} = self.{name}(...): {result.why}")
                    return
            factory = self.method(cls, name)
            if factory is not None:
                self._type_from_returns(concrete, cls, factory, f"factory method {cls.name}.{name}()",
                                        attr, typed, reasons)
                return
        reasons.append(f"self.{attr} = self.{name}(...): no method or class attribute {name} found")

    def _type_from_returns(self, concrete, owner, factory, label, attr, typed, reasons) -> None:
        if factory is None or not factory.returns:
            reasons.append(f"self.{attr} is built by {label}, whose return value cannot be typed")
            return
        module = owner.module
        before = len(typed)
        for value in factory.returns:
            name = value[1:] if value.startswith("=") else value
            for local, local_value in factory.local_types:
                if local == name:
                    name = local_value[1:] if local_value.startswith("=") else local_value
            if name.startswith("self.") and owner.qualname:
                self._type_from_self_callee(concrete, name[5:], attr, typed, reasons)
                continue
            result = self.resolve_class(module, name)
            if isinstance(result, ClassRef):
                typed.append(Typed(result, f"{label} returns {name}(...)"))
            else:
                reasons.append(_reason(f"{label} returns {name}: {result.why}", result))
        if len(typed) == before and not reasons:
            reasons.append(f"self.{attr} is built by {label}, whose return value cannot be typed")

    def _type_from_value(self, concrete, owner, method, value_src, attr, typed, reasons) -> None:
        """``self.x = param`` with an annotated parameter."""
        for param in method.params:
            if param.name == value_src and param.annotation:
                result = self.resolve_class(owner.module, param.annotation)
                if isinstance(result, ClassRef):
                    typed.append(Typed(result, f"parameter annotation ({param.name}: {param.annotation})"))
                    return
        if value_src in ("self",):
            typed.append(Typed(concrete, f"self.{attr} = self"))

    def _parameter_value(self, concrete: ClassRef, owner: ClassRef, method: Function, param: str
                         ) -> tuple[tuple[str, str] | None, str]:
        """Value of an ``__init__`` parameter of ``owner`` when building ``concrete``:
        a subclass's ``super().__init__(..., param=X)`` wins over the default."""
        classes, _ = self.mro(concrete)
        if owner in classes:
            subclasses = classes[: classes.index(owner)]
            positions = [p.name for p in method.params]
            for sub in reversed(subclasses):  # nearest subclass first
                init = self.method(sub, method.name)
                if init is None:
                    continue
                for call in init.calls:
                    if call.func not in (f"super().{method.name}", f"{owner.name}.{method.name}"):
                        continue
                    for key, value in call.kwargs:
                        if key == param:
                            return self._param_arg(concrete, sub, init, value, param)
                    index = positions.index(param) - 1 if param in positions else -1  # minus self
                    if call.func.startswith(owner.name + "."):
                        index += 1  # explicit Base.__init__(self, ...) passes self positionally
                    if 0 <= index < len(call.args):
                        return self._param_arg(concrete, sub, init, call.args[index], param)
        for p in method.params:
            if p.name == param and p.default and p.default != "None":
                return (owner.module, p.default), f"constructor parameter {param} (default {p.default} in {owner.name})"
        return None, ""

    def _param_arg(self, concrete: ClassRef, sub: ClassRef, init: Function, value: str, param: str):
        # The subclass may itself forward its own parameter: whose value, in turn, a class
        # below it may set (InternS1-Pro -> Qwen3-VL-MoE -> Qwen3-VL: the most derived decides).
        if any(p.name == value for p in init.params):
            return self._parameter_value(concrete, sub, init, value)
        return (sub.module, value), f"constructor parameter {param} (passed {value} by {sub.name})"

    def receiver_types(self, concrete: ClassRef, receiver: str, jedi: bool = True) -> list[Typed] | Untyped:
        """Classes of a receiver path such as ``self.language_model.model`` (``jedi``: as for
        attribute_types)."""
        parts = receiver.split(".")
        if parts[0] != "self":
            return Untyped(f"receiver {receiver} is not an attribute of self")
        current: list[Typed] = [Typed(concrete, "self")]
        for attr in parts[1:]:
            following: list[Typed] = []
            reasons = []
            for typed in current:
                result = self.attribute_types(typed.cls, attr, jedi=jedi)
                if isinstance(result, Untyped):
                    reasons.append(result.why)
                else:
                    for r in result:
                        how = r.how if typed.how == "self" else f"{typed.how}; {r.how}"
                        following.append(Typed(r.cls, how))
            if not following:
                return Untyped("; ".join(reasons) or f"cannot type {receiver}")
            current = following
        return current


_BUILTINS = {
    "object", "int", "str", "list", "dict", "tuple", "set", "float", "bool", "type", "super",
    "getattr", "setattr", "hasattr", "len", "range", "print", "isinstance", "Exception",
    "ValueError", "TypeError", "RuntimeError", "AttributeError", "NotImplementedError",
}


_LITERAL = re.compile(r"(None|True|False|-?[0-9][0-9_.eE+-]*|[rbuf]*(['\"]).*\2)")


def _literal(value_src: str) -> bool:
    """A constant value (``None``, a number, a short string): jedi cannot type it as a class."""
    return bool(_LITERAL.fullmatch(value_src.strip()))
