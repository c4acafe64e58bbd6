"""Resolve stage, attribute typing: the classes ``self.attr`` (or a receiver path such as
``self.language_model.model``) may hold on an instance of a class, from the tree's own
assignments (class annotations, constructor calls, factories, registry builders, parameters
and their defaults, properties), with jedi as a counted, time-bounded fallback. Name lookup
and the MRO it asks of the Resolver (``Lookup``).

Every answer says how it was obtained (``how``) or why it could not be (``why``)."""

from __future__ import annotations

import re

from tracer.index.reads import Memo
from tracer.model.summary import Function
from tracer.resolve.jedi_fallback import JediFallback
from tracer.resolve.refs import ClassRef, Lookup, OutsideReason, Typed, Untyped, outside_reason


class AttributeTypes:
    def __init__(self, lookup: Lookup):
        self.lookup = lookup
        self.jedi: JediFallback | None = None  # created on first need
        self.jedi_questions = 0  # the fallback counted: questions asked, classes named
        self.jedi_answers = 0
        self._jedi_asked: Memo[list[Typed]] = Memo(lookup.project.reads)  # one question once a run

    def attribute_types(self, concrete: ClassRef, attr: str, jedi: bool = True) -> list[Typed] | Untyped:
        """Possible classes of ``self.<attr>`` on an instance of ``concrete`` (``jedi``: ask it
        where the tree's own assignments do not tell)."""
        classes, _ = self.lookup.mro(concrete)
        typed: list[Typed] = []
        reasons: list[str] = []
        for owner in classes:
            definition = self.lookup.class_def(owner)
            if definition is None:
                continue
            for ann_name, ann_type in definition.annotations:
                if ann_name == attr and ann_type:
                    result = self.lookup.resolve_class(owner.module, ann_type)
                    if isinstance(result, ClassRef):
                        typed.append(Typed(result, f"class annotation ({attr}: {ann_type})"))
            assigns = re.compile(rf"self\.{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)")
            for method in self.lookup.methods_mentioning(owner, pattern=assigns):
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
        if jedi and reasons and not all(isinstance(r, OutsideReason) for r in reasons):
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

            some = next(iter(self.lookup.project.by_module.values()), None)
            if some is None:
                return []
            depth = len(some.module.split(".")) + (1 if some.is_package else 0)
            self.jedi = JediFallback(Path(some.abspath).parents[depth - 1])
        assigns = re.compile(rf"self\.{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)")
        for owner in classes:
            for method in self.lookup.methods_mentioning(owner, pattern=assigns):
                for write in method.writes:
                    if write.target != f"self.{attr}" or _literal(write.value_src):
                        continue  # a literal (None, a number) is no class of the tree, whatever jedi says
                    source = self.lookup.project.by_module.get(owner.module)
                    text = self.lookup.project.text(owner.module)
                    if source is None or text is None:
                        continue
                    from tracer.index.cache import entry_key

                    key = entry_key(text.encode(), owner.module, f"{write.line}:{write.col}", "jedi")
                    names = self.lookup.project.cache.get_json(key)
                    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                        names = None  # absent, or not an entry of ours
                    if names is None:
                        jedi = self.jedi
                        assert jedi is not None
                        names = jedi.infer_attribute(text, source.abspath, write.line, write.col + len("self."))
                        if jedi.calls_made_answer:
                            self.lookup.project.cache.put_json(key, names)
                    typed = []
                    for full_name in names:
                        if full_name.startswith("__main__."):
                            # jedi names the asked file's own module "__main__" (the tree is kept
                            # off its sys.path, so it cannot name the package): it is owner's module
                            full_name = owner.module + full_name[len("__main__"):]
                        symbol = self.lookup.resolve_absolute(full_name)
                        if symbol.kind == "class":
                            typed.append(Typed(ClassRef(symbol.module, symbol.qualname),
                                               f"jedi inference of self.{attr} ({owner.name}.{method.name}:{write.line})"))
                    if typed:
                        return typed
        return []

    def _property_types(self, concrete: ClassRef, attr: str, depth: int = 0) -> list[Typed] | None:
        """``@property def attr(self): return self._attr`` (or ``return Cls(...)``)."""
        found = self.lookup.find_method(concrete, attr)
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
                result = self.lookup.resolve_class(owner.module, value)
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
            result = self.lookup.resolve_class(module, name)
            if isinstance(result, ClassRef):
                typed.append(Typed(result, how))
            else:
                reasons.append(outside_reason(f"self.{attr} = {callee}(...): {result.why}", result))
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
        if callee.rpartition(".")[2] in self.lookup.registry_factories:
            self._type_from_registry(owner, method, callee, line, attr, typed, reasons)
            return
        symbol = self.lookup.resolve_name(owner.module, callee)
        if symbol.kind == "function":
            factory = self.lookup.project.function(symbol.module, symbol.qualname)
            self._type_from_returns(concrete, ClassRef(symbol.module, ""), factory, f"factory {callee}()",
                                    attr, typed, reasons)
            return
        result = self.lookup.resolve_class(owner.module, callee)
        if isinstance(result, ClassRef):
            typed.append(Typed(result, f"attribute type from {owner.name}.{method.name} (self.{attr} = {callee}(...))"))
        else:
            reasons.append(outside_reason(f"self.{attr} = {callee}(...): {result.why}", result))

    def _type_from_registry(self, owner, method, callee, line, attr, typed, reasons) -> None:
        """``self.x = build(..., architectures=["Arch"])``: the registry's class for Arch."""
        keyword, table = self.lookup.registry_factories[callee.rpartition(".")[2]]
        calls = [c for c in method.calls if c.func == callee and line <= c.line <= line + 3]
        # A class passed by name (`model_class=Cls`) decides over the architecture name.
        for key, value in (calls[0].kwargs if calls else ()):
            if key in self.lookup.registry_class_keywords:
                result = self.lookup.resolve_class(owner.module, value)
                if isinstance(result, ClassRef):
                    typed.append(Typed(result, f"{callee}({key}={value})"))
                    return
        names = [re.findall(r"[\"']([^\"']+)[\"']", value) for call in calls[:1]
                 for key, value in call.kwargs if key == keyword]
        names = names[0] if names else []
        if not names:
            reasons.append(OutsideReason(f"self.{attr} = {callee}(...) without a literal {keyword}=[...]: the "
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
        classes, _ = self.lookup.mro(concrete)
        for cls in classes:
            definition = self.lookup.class_def(cls)
            if definition is None:
                continue
            for attr_name, value in definition.class_attrs:
                if attr_name == name:
                    result = self.lookup.resolve_class(cls.module, value)
                    if isinstance(result, ClassRef):
                        typed.append(Typed(result, f"class attribute {cls.name}.{name} = {value}"))
                    else:
                        reasons.append(f"self.{attr} = self.{name}(...): {result.why}")
                    return
            factory = self.lookup.method(cls, name)
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
            result = self.lookup.resolve_class(module, name)
            if isinstance(result, ClassRef):
                typed.append(Typed(result, f"{label} returns {name}(...)"))
            else:
                reasons.append(outside_reason(f"{label} returns {name}: {result.why}", result))
        if len(typed) == before and not reasons:
            reasons.append(f"self.{attr} is built by {label}, whose return value cannot be typed")

    def _type_from_value(self, concrete, owner, method, value_src, attr, typed, reasons) -> None:
        """``self.x = param`` with an annotated parameter."""
        for param in method.params:
            if param.name == value_src and param.annotation:
                result = self.lookup.resolve_class(owner.module, param.annotation)
                if isinstance(result, ClassRef):
                    typed.append(Typed(result, f"parameter annotation ({param.name}: {param.annotation})"))
                    return
        if value_src in ("self",):
            typed.append(Typed(concrete, f"self.{attr} = self"))

    def _parameter_value(self, concrete: ClassRef, owner: ClassRef, method: Function, param: str
                         ) -> tuple[tuple[str, str] | None, str]:
        """Value of an ``__init__`` parameter of ``owner`` when building ``concrete``:
        a subclass's ``super().__init__(..., param=X)`` wins over the default."""
        classes, _ = self.lookup.mro(concrete)
        if owner in classes:
            subclasses = classes[: classes.index(owner)]
            positions = [p.name for p in method.params]
            for sub in reversed(subclasses):  # nearest subclass first
                init = self.lookup.method(sub, method.name)
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


_LITERAL = re.compile(r"(None|True|False|-?[0-9][0-9_.eE+-]*|[rbuf]*(['\"]).*\2)")


def _literal(value_src: str) -> bool:
    """A constant value (``None``, a number, a short string): jedi cannot type it as a class."""
    return bool(_LITERAL.fullmatch(value_src.strip()))
