"""Expressions: names, attributes, subscripts, operators, comparisons, literals,
comprehensions, calls (methods of plain values, recorded calls on objects)."""

from __future__ import annotations

import copy
import operator
from typing import Any

import libcst as cst

from tracer.interp import budget
from tracer.interp.base import InterpreterCore
from tracer.interp.control import BIN_OPS, CMP_OPS, Raise, exit_condition
from tracer.interp.values import (
    ABSENT,
    NOT_PLAIN,
    Call,
    Obj,
    Unknown,
    is_unknown,
    same_value,
)


class Expressions(InterpreterCore):
    """Mixin of the interpreter: evaluating expressions and calls."""

    def truth(self, value: Any) -> Any:
        if is_unknown(value):
            return value
        if isinstance(value, Obj):
            return True
        return bool(value)

    def apply(self, fn: Any, left: Any, right: Any, node: cst.CSTNode) -> Any:
        if fn is None:
            return self.unknown(node, "operator not modelled")
        for value in (left, right):
            if is_unknown(value):
                return Unknown(self.src(node), f"depends on {value.expr}: {value.why}")
        too_big = budget.check_binary(getattr(fn, "__name__", ""), left, right)
        if too_big is not None:
            return self.unknown(node, too_big)
        self.charge(budget.units(left) + budget.units(right))
        try:
            return self.bounded(node, fn(left, right))
        except Exception as exc:  # noqa: BLE001 - arithmetic on scanned values
            return self.unknown(node, f"{type(exc).__name__}: {exc}")

    def eval(self, node: cst.BaseExpression | None) -> Any:
        if node is None:
            return None
        self.tick()
        method = getattr(self, f"eval_{type(node).__name__}", None)
        if method is None:
            return self.unknown(node, f"expression {type(node).__name__} is not modelled")
        return method(node)

    def eval_Integer(self, node: cst.Integer) -> Any:
        return node.evaluated_value

    def eval_Float(self, node: cst.Float) -> Any:
        return node.evaluated_value

    def eval_SimpleString(self, node: cst.SimpleString) -> Any:
        return node.evaluated_value

    def eval_ConcatenatedString(self, node: cst.ConcatenatedString) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        return self.apply(operator.add, left, right, node)

    def eval_FormattedString(self, node: cst.FormattedString) -> Any:
        parts = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                parts.append(part.value)
                continue
            assert isinstance(part, cst.FormattedStringExpression)
            value = self.eval(part.expression)
            if is_unknown(value) or part.format_spec or part.conversion:
                return self.unknown(node, "f-string with a part that could not be evaluated")
            too_big = budget.past(value) or budget.past("".join(parts))
            if too_big is not None:
                return self.unknown(node, too_big)
            if part.equal is not None:
                parts.append(f"{self.src(part.expression)}={value!r}")
            else:
                parts.append(str(value))
        return self.bounded(node, "".join(parts))

    def eval_Name(self, node: cst.Name) -> Any:
        name = node.value
        if name in self.s.locals:
            return self.s.locals[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        found, value = self.lookup_path(name)
        if found:
            return value
        return Unknown(name, f"`{name}` is not bound", name)

    def eval_Attribute(self, node: cst.Attribute) -> Any:
        attr = node.attr.value
        if not self.root_is_local(node):
            path = self.path_of(node)
            if path is not None:
                found, value = self.lookup_path(path)
                if value is ABSENT:
                    return self.unknown(node, f"`{path}` does not exist (AttributeError)")
                if found:
                    return value
        base = self.eval(node.value)
        if isinstance(base, dict):
            if attr in base:
                return base[attr]
            return self.unknown(node, f"`{attr}` is not in the bound config")
        if isinstance(base, Obj):
            try:
                return base.attr(attr)
            except KeyError:
                return Unknown(self.src(node), f"attribute `{attr}` of {base.name} is not known", f"{base.name}.{attr}")
        if is_unknown(base):
            if base.path is not None:
                path = f"{base.path}.{attr}"
                return Unknown(path, f"`{path}` is not bound", path)
            return Unknown(self.src(node), base.why)
        return self.unknown(node, f"attribute `{attr}` of a {type(base).__name__} is not modelled")

    def eval_Subscript(self, node: cst.Subscript) -> Any:
        if not self.root_is_local(node):
            path = self.path_of(node)
            if path is not None:
                found, value = self.lookup_path(path)
                if found:
                    return value
        base = self.eval(node.value)
        if len(node.slice) != 1:
            return self.unknown(node, "multi-dimensional subscript")
        elem = node.slice[0].slice
        if isinstance(elem, cst.Index):
            key = self.eval(elem.value)
            if is_unknown(base):
                if base.path is not None and not is_unknown(key):
                    path = f"{base.path}[{key!r}]"
                    return Unknown(path, f"`{path}` is not bound", path)
                return Unknown(self.src(node), base.why)
            if is_unknown(key):
                return Unknown(self.src(node), f"depends on {key.expr}: {key.why}")
            if isinstance(base, (list, tuple)) and isinstance(key, int) and not isinstance(key, bool) and not -len(base) <= key < len(base):
                # Indexing a known sequence out of range raises, as it would at run time.
                raise Raise(self.line(node), f"IndexError: {self.src(node)} with index {key} on a sequence of length {len(base)}",
                             exit_condition(self.s))
            try:
                return base[key]
            except (IndexError, KeyError, TypeError) as exc:
                return self.unknown(node, f"{type(exc).__name__}: {exc}")
        assert isinstance(elem, cst.Slice)
        lower, upper, step = (self.eval(elem.lower), self.eval(elem.upper), self.eval(elem.step))
        for value in (base, lower, upper, step):
            if is_unknown(value):
                return Unknown(self.src(node), value.why)
        try:
            return base[lower:upper:step]
        except TypeError as exc:
            return self.unknown(node, f"TypeError: {exc}")

    def eval_BinaryOperation(self, node: cst.BinaryOperation) -> Any:
        return self.apply(BIN_OPS.get(type(node.operator)), self.eval(node.left), self.eval(node.right), node)

    def eval_UnaryOperation(self, node: cst.UnaryOperation) -> Any:
        value = self.eval(node.expression)
        if isinstance(node.operator, cst.Not):
            truth = self.truth(value)
            return truth if is_unknown(truth) else (not truth)
        if is_unknown(value):
            return Unknown(self.src(node), value.why)
        try:
            if isinstance(node.operator, cst.Minus):
                return -value
            if isinstance(node.operator, cst.Plus):
                return +value
            if isinstance(node.operator, cst.BitInvert):
                return ~value
        except TypeError as exc:
            return self.unknown(node, f"TypeError: {exc}")
        return self.unknown(node, "operator not modelled")

    def eval_BooleanOperation(self, node: cst.BooleanOperation) -> Any:
        left = self.eval(node.left)
        truth = self.truth(left)
        is_and = isinstance(node.operator, cst.And)
        if truth is True:
            return self.eval(node.right) if is_and else left
        if truth is False:
            return left if is_and else self.eval(node.right)
        # Left unknown: the right side alone can still decide the truth value.
        right_truth = self.truth(self.eval(node.right))
        if is_and and right_truth is False:
            return False
        if not is_and and right_truth is True:
            return True
        return Unknown(self.src(node), f"depends on {left.expr}: {left.why}")

    def eval_Comparison(self, node: cst.Comparison) -> Any:
        left = self.eval(node.left)
        result: Any = True
        for target in node.comparisons:
            right = self.eval(target.comparator)
            outcome = self.compare(target.operator, left, right, node)
            if self.observer is not None:
                self.observer.on_comparison(self, target, left, outcome, node)
            if outcome is False:
                return False
            if is_unknown(outcome):
                result = outcome
            left = right
        return result

    def compare(self, op: cst.BaseCompOp, left: Any, right: Any, node: cst.CSTNode) -> Any:
        if isinstance(op, (cst.Is, cst.IsNot)):
            positive = isinstance(op, cst.Is)
            if is_unknown(left) or is_unknown(right):
                return Unknown(self.src(node), (left if is_unknown(left) else right).why)
            if right is None or left is None:
                same = left is None and right is None
            elif isinstance(left, bool) and isinstance(right, bool):
                same = left == right
            else:
                return self.unknown(node, "identity of two objects")
            return same if positive else not same
        if isinstance(op, (cst.In, cst.NotIn)):
            if is_unknown(left) or is_unknown(right):
                return Unknown(self.src(node), (left if is_unknown(left) else right).why)
            if isinstance(right, Obj):
                return self.unknown(node, f"membership in {right.name}")
            if isinstance(right, (list, tuple, set, frozenset)) and any(is_unknown(item) for item in right):
                # Only a known equal item decides; otherwise an unknown item might match.
                if any(not is_unknown(item) and item == left for item in right):
                    return isinstance(op, cst.In)
                unknown_item = next(item for item in right if is_unknown(item))
                return Unknown(self.src(node), f"depends on {unknown_item.expr}: {unknown_item.why}")
            self.charge(budget.units(right))
            try:
                found = left in right
            except TypeError as exc:
                return self.unknown(node, f"TypeError: {exc}")
            return found if isinstance(op, cst.In) else not found
        fn = CMP_OPS.get(type(op))
        value = self.apply(fn, left, right, node)
        return value

    def eval_IfExp(self, node: cst.IfExp) -> Any:
        test = self.truth(self.eval(node.test))
        if test is True:
            return self.eval(node.body)
        if test is False:
            return self.eval(node.orelse)
        body, orelse = self.eval(node.body), self.eval(node.orelse)
        if same_value(body, orelse):
            return body
        return Unknown(self.src(node), f"depends on {test.expr}: {test.why}")

    def eval_List(self, node: cst.List) -> Any:
        return self.bounded(node, self.sequence(node))

    def eval_Tuple(self, node: cst.Tuple) -> Any:
        value = self.bounded(node, self.sequence(node))
        return tuple(value) if isinstance(value, list) else value

    def eval_Set(self, node: cst.Set) -> Any:
        value = self.bounded(node, self.sequence(node))
        if isinstance(value, list):
            try:
                return set(value)
            except TypeError:
                return self.unknown(node, "unhashable set element")
        return value

    def sequence(self, node: Any) -> Any:
        out: list = []
        for element in node.elements:
            value = self.eval(element.value)
            if isinstance(element, cst.StarredElement):
                items = self.iterate(value, element.value)
                if is_unknown(items):
                    return Unknown(self.src(node), items.why)
                out.extend(items)
            else:
                out.append(value)
        return out

    def eval_Dict(self, node: cst.Dict) -> Any:
        out: dict = {}
        for element in node.elements:
            if isinstance(element, cst.StarredDictElement):
                value = self.eval(element.value)
                if not isinstance(value, dict):
                    return self.unknown(node, "dict unpacking of an unknown value")
                out.update(value)
                continue
            assert isinstance(element, cst.DictElement)
            key = self.eval(element.key)
            if is_unknown(key):
                return Unknown(self.src(node), key.why)
            out[key] = self.eval(element.value)
        return self.bounded(node, out)

    def comprehension(self, node: Any, produce: Any) -> Any:
        saved = self.s.locals
        self.s.locals = dict(saved)
        results: list = []
        try:
            failure = self._comp_for(node.for_in, produce, results)
        finally:
            self.s.locals = saved
        return failure if failure is not None else self.bounded(node, results)

    def _comp_for(self, comp: cst.CompFor, produce: Any, results: list) -> Any:
        items = self.iterate(self.eval(comp.iter), comp.iter)
        if is_unknown(items):
            return Unknown(self.src(comp.iter), items.why)
        for item in items:
            self.tick()
            self.assign(comp.target, item)
            keep = True
            for condition in comp.ifs:
                truth = self.truth(self.eval(condition.test))
                if is_unknown(truth):
                    return Unknown(self.src(condition.test), truth.why)
                if not truth:
                    keep = False
                    break
            if not keep:
                continue
            if comp.inner_for_in is not None:
                failure = self._comp_for(comp.inner_for_in, produce, results)
                if failure is not None:
                    return failure
            else:
                results.append(produce())
        return None

    def eval_ListComp(self, node: cst.ListComp) -> Any:
        return self.comprehension(node, lambda: self.eval(node.elt))

    def eval_GeneratorExp(self, node: cst.GeneratorExp) -> Any:
        return self.comprehension(node, lambda: self.eval(node.elt))

    def eval_SetComp(self, node: cst.SetComp) -> Any:
        value = self.comprehension(node, lambda: self.eval(node.elt))
        return set(value) if isinstance(value, list) else value

    def eval_DictComp(self, node: cst.DictComp) -> Any:
        value = self.comprehension(node, lambda: (self.eval(node.key), self.eval(node.value)))
        return dict(value) if isinstance(value, list) else value

    def eval_NamedExpr(self, node: cst.NamedExpr) -> Any:
        value = self.eval(node.value)
        self.assign(node.target, value)
        return value

    def eval_Ellipsis(self, node: cst.Ellipsis) -> Any:
        return Ellipsis

    def eval_Call(self, node: cst.Call) -> Any:
        if isinstance(node.func, cst.Attribute):
            # a call of another class's method whose result the caller bound (`Base.build()`)
            owner = self.path_of(node.func.value)
            if owner and owner.split(".")[0] not in ("self", *self.s.locals):
                found, value = self.lookup_path(f"{owner}.{node.func.attr.value}()")
                if found:
                    return value
        args: list = []
        kwargs: dict = {}
        for arg in node.args:
            value = self.eval(arg.value)
            if arg.star == "*":
                items = self.iterate(value, arg.value)
                if is_unknown(items):
                    return self.unknown(node, f"*args could not be evaluated: {items.why}")
                args.extend(items)
            elif arg.star == "**":
                if not isinstance(value, dict):
                    return self.unknown(node, "**kwargs could not be evaluated")
                kwargs.update(value)
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = value
            else:
                args.append(value)
        func = node.func
        if not node.args and isinstance(func, cst.Name):
            found, value = self.lookup_path(f"{func.value}()")
            if found:
                return value
        if isinstance(func, cst.Name) and func.value not in self.s.locals:
            builtin = getattr(self, f"builtin_{func.value}", None)
            if builtin is not None:
                return builtin(node, args, kwargs)
            self.record_call(None, func.value, args, kwargs, node)
            return self.unknown(node, f"result of `{func.value}(...)`, which the evaluator does not follow")
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver_path = self.path_of(func.value)
            if receiver_path in ("os", "os.environ") and method in ("getenv", "get"):
                return self.getenv(node, args)
            if receiver_path == "self" and method in self.helpers:
                return self.run_helper(method, args, kwargs, node)
            receiver = self.eval(func.value)
            if isinstance(receiver, (list, dict, str, tuple, set, int, float)) and not isinstance(receiver, bool):
                value = self.plain_method(receiver, method, args, kwargs, node)
                if value is not NOT_PLAIN:
                    return value
            if not (receiver_path or "").startswith("self"):
                # a local holding a sub-model (`holder = getattr(self, "model", self)`): its place
                held = receiver.path if isinstance(receiver, (Obj, Unknown)) else None
                receiver_path = held if held and (held == "self" or held.startswith("self.")) else receiver_path
            self.record_call(receiver_path or self.src(func.value), method, args, kwargs, node)
            return self.unknown(node, f"result of `.{method}(...)`, which the evaluator does not follow")
        self.record_call(None, self.src(func), args, kwargs, node)
        return self.unknown(node, "result of a call the evaluator does not follow")

    def record_call(self, receiver: str | None, method: str, args: list, kwargs: dict, node: cst.Call) -> None:
        line = self.line(node)
        for value in list(args) + list(kwargs.values()):
            if is_unknown(value) and receiver is not None and receiver.startswith("self"):
                self.note(value.expr, line, f"argument of {receiver}.{method}: {value.why}")
        self.charge(budget.units(args))
        self.s.calls.append(Call(receiver, method, tuple(copy.deepcopy(args)), tuple(kwargs.items()), line, self.src(node)))

    def getenv(self, node: cst.Call, args: list) -> Any:
        environ = self.env.get("os.environ")
        if not isinstance(environ, dict) or not args or is_unknown(args[0]):
            return self.unknown(node, "environment variables are not bound (bind `os.environ`)")
        default = args[1] if len(args) > 1 else None
        return environ.get(args[0], default)

    def plain_method(self, receiver: Any, method: str, args: list, kwargs: dict, node: cst.Call) -> Any:
        if any(is_unknown(a) for a in args) and method not in ("append", "extend", "insert", "get"):
            missing = next(a for a in args if is_unknown(a))
            return self.unknown(node, f"argument could not be evaluated: depends on {missing.expr}: {missing.why}")
        self.charge(budget.units(args) + budget.units(kwargs))
        too_big = budget.check_method(receiver, method, args, kwargs)
        if too_big is not None:
            return self.unknown(node, too_big)
        linear = not (isinstance(receiver, list) and method in ("append", "extend"))  # the rest walk the receiver
        self.charge(budget.units(receiver) if linear else 1)
        try:
            if isinstance(receiver, list) and method in ("append", "extend", "insert", "remove", "pop", "sort", "reverse", "clear"):
                result = getattr(receiver, method)(*args, **kwargs)
                return result
            if isinstance(receiver, dict) and method == "get":
                key = args[0]
                if is_unknown(key):
                    return self.unknown(node, key.why)
                if key in receiver:
                    return receiver[key]
                return args[1] if len(args) > 1 else kwargs.get("default")
            allowed: dict[type, tuple[str, ...]] = {
                list: ("index", "count", "copy"),
                tuple: ("index", "count"),
                dict: ("keys", "values", "items", "copy"),
                str: ("split", "join", "strip", "lower", "upper", "startswith", "endswith", "format", "replace", "rsplit", "lstrip", "rstrip"),
                set: ("union", "intersection", "difference", "copy"),
            }
            if method in allowed.get(type(receiver), ()):
                result = getattr(receiver, method)(*args, **kwargs)
                return self.bounded(node, list(result) if method in ("keys", "values", "items") else result)
        except Exception as exc:  # noqa: BLE001
            return self.unknown(node, f"{type(exc).__name__}: {exc}")
        return NOT_PLAIN

    def _all_known(self, node: cst.Call, values: list) -> Unknown | None:
        for value in values:
            if is_unknown(value):
                return Unknown(self.src(node), f"depends on {value.expr}: {value.why}")
        return None

    def _pure(self, node: cst.Call, fn: Any, args: list, kwargs: dict) -> Any:
        failure = self._all_known(node, list(args) + list(kwargs.values()))
        if failure is not None:
            return failure
        for value in args:
            if isinstance(value, (list, tuple)) and any(is_unknown(v) for v in value):
                return self.unknown(node, "a sequence with unknown items")
        self.charge(budget.units(args) + budget.units(kwargs))
        try:
            return self.bounded(node, fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001
            return self.unknown(node, f"{type(exc).__name__}: {exc}")


