"""What a call in a forward runs, for a value followed down a model's call chain.

``self.model(...)`` runs the forward of the class ``self.model`` holds; ``layer(...)``
in ``for layer in self.layers`` runs the forward of the classes the container is
built from (``nn.ModuleList([FooLayer(...) for ...])``); ``super().forward(...)``
the next forward of the MRO; ``self.helper(...)`` the helper. A sub-module held
through a constructor parameter (``self.model = model``, given by a subclass's
``super().__init__(FooModel(config), ...)``) is typed from what the subclass passes.
The resolver's attribute types are asked first; the constructors are read for what
they leave open.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from tracer.bind.syntax import super_call
from tracer.resolve.resolver import ClassRef
from tracer.resolve.tree import classes_named

if TYPE_CHECKING:
    from tracer.analysis.tracing import ChainTracing

MAX_PARAM_HOPS = 4  # a constructor parameter handed on by subclasses, one below the other

Target = tuple[ClassRef, ClassRef, str]  # (the instance's class, the class defining the method, the method)


class ArgumentTypes:
    def __init__(self, tracer: ChainTracing):
        self.tracer = tracer
        self.resolver = tracer.resolver

    def call_targets(self, concrete: ClassRef, owner: ClassRef, call: ast.Call,
                     loops: dict[str, set[str]]) -> tuple[list[Target], str]:
        """The methods ``call`` may run, and why none could be named (only for calls rooted at
        ``self`` or a loop over a ``self`` container: a builtin or a free function is no hop)."""
        func = call.func
        if isinstance(func, ast.Name):
            if func.id not in loops:
                return [], ""
            return self._forwards(concrete, sorted(loops[func.id]), f"the elements of self.{'/'.join(sorted(loops[func.id]))}")
        if not isinstance(func, ast.Attribute):
            return [], ""
        base = func.value
        if super_call(base) is not None:
            found = self.resolver.find_method(concrete, func.attr, after=owner)
            return ([(concrete, found[0], func.attr)] if found else []), ""
        if isinstance(base, ast.Name) and base.id == "self":
            found = self.resolver.find_method(concrete, func.attr)
            if found is not None:
                return [(concrete, found[0], func.attr)], ""
            return self._forwards(concrete, [func.attr], f"self.{func.attr}")
        if isinstance(base, ast.Name) and base.id in loops:
            classes, why = self._held_many(concrete, sorted(loops[base.id]))
            return self._methods(classes, func.attr), why
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self":
            classes, why = self.held(concrete, base.attr)
            return self._methods(classes, func.attr), why
        return [], ""

    def _forwards(self, concrete: ClassRef, attrs: list[str], label: str) -> tuple[list[Target], str]:
        classes, why = self._held_many(concrete, attrs)
        called = self.tracer.protocol.module_call
        if not called:
            return [], f"calling {label} runs its __call__, and the pack names no method a module call runs"
        return self._methods(classes, called), why or ("" if classes else f"the class of {label} is unknown")

    def _held_many(self, concrete: ClassRef, attrs: list[str]) -> tuple[list[ClassRef], str]:
        classes: list[ClassRef] = []
        reasons: list[str] = []
        for attr in attrs:
            found, why = self.held(concrete, attr)
            classes.extend(found)
            if why:
                reasons.append(why)
        return list(dict.fromkeys(classes)), ("" if classes else "; ".join(reasons))

    def _methods(self, classes: list[ClassRef], name: str) -> list[Target]:
        targets = []
        for cls in classes:
            found = self.resolver.find_method(cls, name)
            if found is not None:
                targets.append((cls, found[0], name))
        return targets

    # -- what an attribute holds --------------------------------------------------------------------
    def held(self, concrete: ClassRef, attr: str, depth: int = 0) -> tuple[list[ClassRef], str]:
        """Classes of the tree ``self.<attr>`` may hold on an instance of ``concrete``, or why none;
        for a method (``for layer in self.local_layers():``), what its returns hold."""
        getter = self.resolver.find_method(concrete, attr)
        if getter is not None:
            return self._returned(concrete, getter[0], attr, depth)
        typed = self.resolver.attribute_types(concrete, attr, jedi=False)
        if isinstance(typed, list) and typed:
            return [t.cls for t in typed], ""
        classes, _ = self.resolver.mro(concrete)
        for index, cls in enumerate(classes):
            parsed = self.tracer.flow.function(cls, "__init__")
            if parsed is None:
                continue
            node = parsed[0]
            values = [value for target, value in _self_assignments(node) if target == attr]
            if not values:
                continue
            found: list[ClassRef] = []
            for value in values:
                found.extend(self._built_in(concrete, classes[:index], cls, node, value, 0))
            if found:
                return list(dict.fromkeys(found)), ""
            return [], f"self.{attr} is built from {ast.unparse(values[0])[:60]}, no class of the scanned tree"
        return [], getattr(typed, "why", f"no assignment of self.{attr} found")

    def _returned(self, concrete: ClassRef, owner: ClassRef, name: str, depth: int) -> tuple[list[ClassRef], str]:
        parsed = self.tracer.flow.function(owner, name)
        if parsed is None or depth > MAX_PARAM_HOPS:
            return [], f"{owner.name}.{name}() could not be read"
        found: list[ClassRef] = []
        for node in ast.walk(parsed[0]):
            if not (isinstance(node, ast.Return) and node.value is not None):
                continue
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self" \
                        and sub.attr != name:
                    found.extend(self.held(concrete, sub.attr, depth + 1)[0])
        if found:
            return list(dict.fromkeys(found)), ""
        return [], f"{owner.name}.{name}() returns no sub-module of the scanned tree"

    def _built_in(self, concrete: ClassRef, below: list[ClassRef], cls: ClassRef, init: ast.AST, value: ast.expr,
                  depth: int) -> list[ClassRef]:
        """Tree classes constructed in ``value`` (inside ``nn.ModuleList([...])`` too); a constructor
        parameter is followed into what the nearest subclass passes for it."""
        found: list[ClassRef] = []
        for sub in ast.walk(value):
            if isinstance(sub, ast.Call):
                resolved = self.resolver.resolve_class(cls.module, ast.unparse(sub.func))
                if isinstance(resolved, ClassRef):
                    found.append(resolved)
        if found or not isinstance(value, ast.Name) or depth > MAX_PARAM_HOPS:
            return found
        assert isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef))
        params = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
        keywords = params + [a.arg for a in init.args.kwonlyargs]
        if value.id not in keywords:
            return found
        for sub_index in range(len(below) - 1, -1, -1):  # the nearest subclass first
            sub_cls = below[sub_index]
            parsed = self.tracer.flow.function(sub_cls, "__init__")
            if parsed is None:
                continue
            passed = _passed(parsed[0], cls.name, value.id, params.index(value.id) if value.id in params else -1)
            if passed is not None:
                return self._built_in(concrete, below[:sub_index], sub_cls, parsed[0], passed, depth + 1)
        return found

    def classes_named(self, names: tuple[str, ...]) -> list[ClassRef]:
        """Classes of the scanned tree with one of these names (the pack's metadata classes)."""
        return classes_named(self.tracer.project, self.tracer.protocol, names)


def _self_assignments(node: ast.AST) -> list[tuple[str, ast.expr]]:
    found = []
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if isinstance(sub, ast.AnnAssign) else []
        value = getattr(sub, "value", None)
        if value is None:
            continue
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.append((target.attr, value))
    return found


def _passed(init: ast.AST, base_name: str, param: str, index: int) -> ast.expr | None:
    """What ``super().__init__(...)`` (or ``Base.__init__(self, ...)``) in ``init`` passes for ``param``."""
    for sub in ast.walk(init):
        if not (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "__init__"):
            continue
        receiver = sub.func.value
        explicit = isinstance(receiver, ast.Name) and receiver.id == base_name
        if not (explicit or super_call(receiver) is not None):
            continue
        for keyword in sub.keywords:
            if keyword.arg == param:
                return keyword.value
        position = index + (1 if explicit else 0)
        if 0 <= index and position < len(sub.args) and not isinstance(sub.args[position], ast.Starred):
            return sub.args[position]
    return None


__all__ = ["ArgumentTypes"]
