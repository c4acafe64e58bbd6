"""Statements: blocks, assignments, if (with forks where a test is undecidable), for, while."""

from __future__ import annotations

from typing import Any

import libcst as cst

from tracer.interp import budget
from tracer.interp.base import InterpreterCore
from tracer.interp.control import (
    AUG_OPS,
    Break,
    Continue,
    Raise,
    Return,
    State,
    Stop,
    contains_exit,
    exit_condition,
)
from tracer.interp.values import (
    Branch,
    Unknown,
    UnknownNote,
    event_key,
    first_unknown,
    is_unknown,
    same_value,
    with_condition,
)


class Statements(InterpreterCore):
    """Mixin of the interpreter: running statements."""

    def run_block(self, body: Any) -> None:
        statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else body
        for statement in statements:
            self.run_statement(statement)

    def run_statement(self, node: cst.CSTNode) -> None:
        self.tick()
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.run_small(small)
        elif isinstance(node, (cst.BaseSmallStatement,)):
            self.run_small(node)
        elif isinstance(node, cst.If):
            self.run_if(node, "if")
        elif isinstance(node, cst.For):
            self.run_for(node)
        elif isinstance(node, cst.While):
            self.run_while(node)
        elif isinstance(node, cst.With):
            for item in node.items:
                value = self.eval(item.item)
                if item.asname is not None:
                    self.assign(item.asname.name, self.unknown(item.item, "value of a context manager"))
                del value
            self.run_block(node.body)
        elif isinstance(node, cst.Try):
            # The handlers run only if the body raises; the interpreter follows the body.
            try:
                self.run_block(node.body)
            except Raise as exc:
                raise Stop(UnknownNote(exc.source, exc.line, "raise inside try: which handler runs is not modelled")) from None
            if node.orelse is not None:
                self.run_block(node.orelse.body)
            if node.finalbody is not None:
                self.run_block(node.finalbody.body)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.s.locals[node.name.value] = Unknown(node.name.value, "a nested definition")
        else:
            raise Stop(UnknownNote(self.src(node)[:80], self.line(node), f"statement {type(node).__name__} is not modelled", True))

    def run_small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.eval(node.value)
            for target in node.targets:
                self.assign(target.target, value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.eval(node.value))
        elif isinstance(node, cst.AugAssign):
            current = self.eval(node.target)
            value = self.eval(node.value)
            fn = AUG_OPS.get(type(node.operator))
            self.assign(node.target, self.apply(fn, current, value, node))
        elif isinstance(node, cst.Expr):
            self.eval(node.value)
        elif isinstance(node, cst.Return):
            value = self.eval(node.value) if node.value is not None else None
            raise Return(value, self.line(node), self.src(node), exit_condition(self.s))
        elif isinstance(node, cst.Raise):
            raise Raise(self.line(node), self.src(node), exit_condition(self.s))
        elif isinstance(node, cst.Assert):
            test = self.truth(self.eval(node.test))
            if test is False:
                raise Raise(self.line(node), self.src(node), exit_condition(self.s))
            if is_unknown(test):
                self.note(self.src(node.test), self.line(node), "assert condition could not be evaluated; assumed to hold")
        elif isinstance(node, cst.Pass):
            pass
        elif isinstance(node, cst.Break):
            raise Break()
        elif isinstance(node, cst.Continue):
            raise Continue()
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            names = node.names if not isinstance(node.names, cst.ImportStar) else []
            for alias in names:
                name = alias.asname.name if alias.asname else alias.name
                if isinstance(name, cst.Name):
                    self.s.locals[name.value] = Unknown(name.value, "an imported name")
        elif isinstance(node, (cst.Global, cst.Nonlocal, cst.Del)):
            pass
        else:
            raise Stop(UnknownNote(self.src(node)[:80], self.line(node), f"statement {type(node).__name__} is not modelled", True))

    def assign(self, target: cst.BaseExpression, value: Any) -> None:
        if isinstance(target, cst.Name):
            self.s.locals[target.value] = value
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if isinstance(value, (list, tuple)) and len(value) == len(elements):
                for element, item in zip(elements, value, strict=True):
                    self.assign(element, item)
            else:
                for element in elements:
                    self.assign(element, self.unknown(target, f"cannot unpack {value!r}") if not is_unknown(value) else value)
            return
        if isinstance(target, cst.Subscript) and self.root_is_local(target) and len(target.slice) == 1:
            container = self.eval(target.value)
            elem = target.slice[0].slice
            if isinstance(elem, cst.Index) and isinstance(container, (list, dict)):
                key = self.eval(elem.value)
                if not is_unknown(key):
                    try:
                        container[key] = value
                        return
                    except (IndexError, TypeError):
                        pass
            self.note(self.src(target), self.line(target), "assignment to this item could not be evaluated")
            return
        path = self.path_of(target)
        if isinstance(target, cst.Attribute) and path is not None and self.root_is_local(target):
            holder = self.eval(target.value)
            if isinstance(holder, dict):  # an attribute of a config mapping held in a local or argument
                holder[target.attr.value] = value
                self.s.writes[path] = value
                self.s.write_lines[path] = self.line(target)
                return
        if path is None or self.root_is_local(target):
            self.note(self.src(target), self.line(target), "assignment target could not be resolved")
            return
        unknown = first_unknown(value)
        if unknown is not None:
            self.note(unknown.expr, self.line(target), f"value written to {path}: {unknown.why}")
        self.s.writes[path] = value
        self.s.write_lines[path] = self.line(target)

    def run_if(self, node: cst.If, kind: str) -> None:
        condition = self.src(node.test)
        test = self.truth(self.eval(node.test))
        line = self.line(node)
        if test is True:
            self.s.branches.append(Branch(line, condition, kind, True))
            self.s.conditions.append(condition)
            try:
                self.run_block(node.body)
            finally:
                self.s.conditions.pop()
            return
        if test is False:
            if isinstance(node.orelse, cst.If):
                self.s.branches.append(Branch(line, condition, kind, False))
                self.s.conditions.append(f"not ({condition})")
                try:
                    self.run_if(node.orelse, "elif")
                finally:
                    self.s.conditions.pop()
            elif isinstance(node.orelse, cst.Else):
                self.s.branches.append(Branch(line, condition, "else", False))
                self.s.conditions.append(f"not ({condition})")
                try:
                    self.run_block(node.orelse.body)
                finally:
                    self.s.conditions.pop()
            else:
                self.s.branches.append(Branch(line, condition, "none", False))
            return
        # Undecidable: follow both sides when neither leaves the function, then merge.
        self.s.branches.append(Branch(line, condition, "unknown", test))
        body_exits = contains_exit(node.body)
        else_exits = node.orelse is not None and contains_exit(node.orelse)
        if self.observer is not None and self.observer.loops_run == 0 and body_exits != else_exits:
            # A forward that raises or returns before its decoder loop captures nothing
            # at all; what is captured is decided on the path that reaches the loop.
            self.note(condition, line, f"assumed the side of `{condition}` that reaches the decoder loop ({test.why})", True)
            self.s.forks.append(condition)
            try:
                if not body_exits:
                    self.run_block(node.body)
                elif isinstance(node.orelse, cst.If):
                    self.run_if(node.orelse, "elif")
                elif isinstance(node.orelse, cst.Else):
                    self.run_block(node.orelse.body)
            finally:
                self.s.forks.pop()
            return
        if body_exits or else_exits:
            raise Stop(UnknownNote(condition, line, f"cannot decide `{condition}` ({test.why}) and one side leaves the function", True))
        self.note(condition, line, f"branch condition could not be evaluated: {test.why}")
        base = self.s
        sides = []
        for side in (node.body, node.orelse):
            self.charge(budget.units(base.locals) + budget.units(base.writes))  # the fork copies both
            self.s = base.fork()
            self.s.forks.append(condition)
            if isinstance(side, cst.If):
                self.run_if(side, "elif")
            elif isinstance(side, cst.Else):
                self.run_block(side.body)
            elif side is not None:
                self.run_block(side)
            self.s.forks.pop()
            sides.append(self.s)
        self.s = self.merge(base, sides[0], sides[1], condition, line)

    def merge(self, base: State, a: State, b: State, condition: str, line: int) -> State:
        merged = base.fork()
        why = f"depends on `{condition}` (line {line}), which could not be evaluated"
        for attr in ("locals", "writes"):
            left, right = getattr(a, attr), getattr(b, attr)
            out = {}
            for key in list(left) + [k for k in right if k not in left]:
                if key in left and key in right and same_value(left[key], right[key]):
                    out[key] = left[key]
                else:
                    out[key] = Unknown(key, why, key if attr == "writes" else None)
                    if attr == "writes":
                        self.note(key, line, why)
            setattr(merged, attr, out)
        merged.write_lines = {**a.write_lines, **b.write_lines}
        for attr in ("calls", "events", "branches", "visited"):
            start = len(getattr(base, attr))
            left, right = getattr(a, attr)[start:], getattr(b, attr)[start:]
            key = event_key if attr == "events" else (lambda item: item)
            left_keys, right_keys = [key(i) for i in left], [key(i) for i in right]
            combined = list(getattr(base, attr))
            for item in left:
                if key(item) in right_keys or attr in ("branches", "visited"):
                    combined.append(item)
                else:
                    combined.append(with_condition(item, condition))
            for item in right:
                if key(item) not in left_keys:
                    combined.append(item if attr in ("branches", "visited") else with_condition(item, condition))
            setattr(merged, attr, combined)
        return merged

    def iterate(self, iterable: Any, node: cst.CSTNode) -> Any:
        if isinstance(iterable, (list, tuple, range, str, set, frozenset, dict)):
            count = budget.range_length(iterable) if isinstance(iterable, range) else len(iterable)
            if count > budget.MAX_UNITS:
                return Unknown(self.src(node), f"iterating {count:,} items, past the interpreter's budget of {budget.MAX_UNITS:,}")
            self.charge(count)
        if isinstance(iterable, (list, tuple, range, str, set, frozenset)):
            return list(iterable)
        if isinstance(iterable, dict):
            return list(iterable.keys())
        return Unknown(self.src(node), iterable.why if is_unknown(iterable) else f"cannot iterate over {type(iterable).__name__}")

    def run_for(self, node: cst.For) -> None:
        items = self.iterate(self.eval(node.iter), node.iter)
        line = self.line(node)
        is_capture_loop = self.observer is not None and node in self.observer.capture_loops
        if is_unknown(items):
            if is_capture_loop:
                self.observer.loops_unknown += 1
            self.note(self.src(node.iter), line, f"loop range could not be evaluated: {items.why}", True)
            if contains_exit(node.body):
                raise Stop(UnknownNote(self.src(node.iter), line, "loop over an unknown range contains a return/raise"))
            return
        self.loop_depth += 1
        if is_capture_loop:
            self.observer.loop_stack.append(node)
        try:
            for item in items:
                self.tick()
                self.assign(node.target, item)
                if is_capture_loop:
                    first = item[0] if isinstance(item, tuple) and item else item
                    self.s.visited.append(first)
                    self.observer.visit_stack.append(first)
                try:
                    self.run_block(node.body)
                except Continue:
                    continue
                except Break:
                    break
                finally:
                    if is_capture_loop:
                        self.observer.visit_stack.pop()
            else:
                if node.orelse is not None:
                    self.run_block(node.orelse.body)
        finally:
            self.loop_depth -= 1
            if is_capture_loop:
                self.observer.loop_stack.pop()
        if is_capture_loop:
            self.observer.loops_run += 1

    def run_while(self, node: cst.While) -> None:
        for _ in range(10_000):
            test = self.truth(self.eval(node.test))
            if test is False:
                return
            if is_unknown(test):
                raise Stop(UnknownNote(self.src(node.test), self.line(node), f"while condition could not be evaluated: {test.why}"))
            try:
                self.run_block(node.body)
            except Continue:
                continue
            except Break:
                return
        raise Stop(UnknownNote(self.src(node.test), self.line(node), "while loop did not end"))

