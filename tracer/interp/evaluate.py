"""A small abstract interpreter over the CST of one function.

It runs setter bodies (``set_eagle3_layers_to_capture``) and decoder-layer
loops on concrete config values without importing or executing the scanned
code. Values are plain Python data (ints, strings, lists, dicts standing for
configs), :class:`Obj` for objects known to exist, and :class:`Unknown` for
anything the interpreter cannot evaluate. An ``Unknown`` is never guessed
into a value: it propagates, and where it decides a write, a call argument or
a branch it is reported with the expression, the line and the reason.
"""

from __future__ import annotations

import copy
import operator
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = [
    "ABSENT",
    "Branch",
    "Call",
    "CaptureEvent",
    "CaptureResult",
    "Exit",
    "Obj",
    "Outcome",
    "Unknown",
    "UnknownNote",
    "captured_indices",
    "contains_unknown",
    "evaluate_function",
    "is_unknown",
]

_MAX_STEPS = 200_000


# --------------------------------------------------------------------- values


@dataclass(frozen=True)
class Unknown:
    """A value the interpreter could not compute; ``path`` is set when it is an
    unbound attribute chain such as ``self.language_model``."""

    expr: str
    why: str
    path: str | None = None

    def __repr__(self) -> str:
        return f"Unknown({self.expr!r}: {self.why})"


@dataclass(frozen=True)
class Obj:
    """An object known to exist (so ``is None`` is False) with a few known
    attributes and methods; used for sub-models the chain delegates to."""

    name: str
    attrs: tuple = ()  # ((name, value), ...)
    methods: frozenset = frozenset()
    closed: bool = False  # True when ``attrs`` lists every attribute that matters (others are absent)

    def attr(self, name: str) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        raise KeyError(name)


class _Absent:
    """Bound to a dotted name known not to exist (``hasattr`` is False)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


@dataclass(frozen=True)
class Call:
    """A call the function made on an attribute (or a free function)."""

    receiver: str | None  # dotted receiver, e.g. "self.language_model"; None for free functions
    method: str
    args: tuple
    kwargs: tuple  # ((name, value), ...)
    line: int
    source: str
    condition: str | None = None  # set when made inside a branch that could not be decided


@dataclass(frozen=True)
class Exit:
    """A ``return`` or ``raise`` that ended the function."""

    kind: str  # "return" | "raise"
    line: int
    condition: str | None  # source of the enclosing if-condition(s), None at top level
    source: str  # the statement's source


@dataclass(frozen=True)
class Branch:
    line: int
    condition: str
    taken: str  # "if" | "elif" | "else" | "none" | "unknown"
    value: Any = None


@dataclass(frozen=True)
class UnknownNote:
    expr: str
    line: int
    why: str
    affects_capture: bool = False  # it can change what a capture loop captures


@dataclass(frozen=True)
class Outcome:
    writes: Mapping[str, Any]
    calls: tuple
    returned_early: Exit | None
    raised: Exit | None
    return_value: Any
    branches: tuple
    unknowns: tuple
    complete: bool  # False when evaluation stopped at an undecidable branch
    stopped: UnknownNote | None = None
    write_lines: Mapping[str, int] = field(default_factory=dict)  # target -> line of its last write

    @property
    def ended_normally(self) -> bool:
        return self.complete and self.returned_early is None and self.raised is None


@dataclass(frozen=True)
class CaptureEvent:
    index: int  # the layer index i found in layers_to_capture
    line: int
    in_loop: bool  # False for a test outside the decoder loop (e.g. final-norm capture)
    condition: str | None = None  # undecidable condition it depends on


@dataclass(frozen=True)
class CaptureResult:
    visited: tuple  # loop indices the decoder loop visits, in order
    captured: tuple  # layers_to_capture entries really hit, in order (each once per visit)
    events: tuple  # CaptureEvent
    never_visited: tuple  # entries of layers_to_capture that no test hit
    loop_line: int | None
    loop_source: str | None
    unknowns: tuple
    complete: bool
    tested_by: tuple = ()  # "list" (i in layers_to_capture) and/or "marker" (getattr(layer, marker, ...))

    @property
    def captured_outputs(self) -> tuple:
        """Index i captured = input of layer i = output of layer i - 1 (-1 = embedding)."""
        return tuple(i - 1 for i in self.captured)


# ---------------------------------------------------------------- control flow


class _Return(Exception):
    def __init__(self, value: Any, line: int, source: str, condition: str | None = None):
        self.value, self.line, self.source, self.condition = value, line, source, condition


class _Raise(Exception):
    def __init__(self, line: int, source: str, condition: str | None = None):
        self.line, self.source, self.condition = line, source, condition


class _Stop(Exception):
    def __init__(self, note: UnknownNote):
        self.note = note


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


_BIN_OPS = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
    cst.BitAnd: operator.and_,
    cst.BitOr: operator.or_,
    cst.BitXor: operator.xor,
    cst.LeftShift: operator.lshift,
    cst.RightShift: operator.rshift,
}
_AUG_OPS = {
    cst.AddAssign: operator.add,
    cst.SubtractAssign: operator.sub,
    cst.MultiplyAssign: operator.mul,
    cst.DivideAssign: operator.truediv,
    cst.FloorDivideAssign: operator.floordiv,
    cst.ModuloAssign: operator.mod,
    cst.PowerAssign: operator.pow,
}
_CMP_OPS = {
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.LessThan: operator.lt,
    cst.GreaterThan: operator.gt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThanEqual: operator.ge,
}


class _State:
    """Mutable state of one evaluation path (copied when a branch forks)."""

    def __init__(self) -> None:
        self.locals: dict = {}
        self.writes: dict = {}
        self.write_lines: dict = {}
        self.calls: list = []
        self.branches: list = []
        self.events: list = []
        self.visited: list = []
        self.conditions: list = []  # source of enclosing decided if-conditions
        self.forks: list = []  # source of enclosing undecidable conditions

    def fork(self) -> _State:
        other = _State()
        other.locals = copy.deepcopy(self.locals)
        other.writes = copy.deepcopy(self.writes)
        other.write_lines = dict(self.write_lines)
        other.calls = list(self.calls)
        other.branches = list(self.branches)
        other.events = list(self.events)
        other.visited = list(self.visited)
        other.conditions = list(self.conditions)
        other.forks = list(self.forks)
        return other


def _contains_exit(node: cst.CSTNode) -> bool:
    class Finder(cst.CSTVisitor):
        found = False

        def visit_Return(self, _node: cst.Return) -> None:
            self.found = True

        def visit_Raise(self, _node: cst.Raise) -> None:
            self.found = True

        def visit_FunctionDef(self, _node: cst.FunctionDef) -> bool:
            return False

    finder = Finder()
    node.visit(finder)
    return finder.found


class _Interpreter:
    def __init__(
        self,
        module: cst.Module,
        positions: Mapping[cst.CSTNode, Any],
        env: Mapping[str, Any],
        first_line: int,
        watch_path: str | None = None,
        capture_loops: frozenset = frozenset(),
        marker: str | None = None,
    ) -> None:
        self.module = module
        self.positions = positions
        self.env = copy.deepcopy(dict(env))
        self.line_offset = first_line - 1
        self.unknowns: list = []
        self._seen_notes: set = set()
        self.watch_path = watch_path
        self.capture_loops = capture_loops
        self.marker = marker
        self.visit_stack: list = []  # loop index of the capture loops being run
        self.loop_depth = 0
        self.loops_run = 0  # capture loops run over a known range
        self.loops_unknown = 0  # capture loops whose range could not be evaluated
        self.capture_unknown = 0  # capture tests that could not be decided
        self.steps = 0
        self.s = _State()

    # ----------------------------------------------------------- helpers
    def src(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node).strip()

    def line(self, node: cst.CSTNode) -> int:
        pos = self.positions.get(node)
        return (pos.start.line if pos else 1) + self.line_offset

    def note(self, expr: str, line: int, why: str, affects_capture: bool = False) -> None:
        key = (expr, line, why)
        if key not in self._seen_notes:
            self._seen_notes.add(key)
            self.unknowns.append(UnknownNote(expr, line, why, affects_capture))

    def unknown(self, node: cst.CSTNode, why: str, path: str | None = None) -> Unknown:
        return Unknown(self.src(node), why, path)

    def tick(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Stop(UnknownNote("<function>", 0, "evaluation exceeded the step limit", True))

    # ----------------------------------------------------------- lookup
    def lookup_path(self, path: str) -> tuple:
        """(found, value) for a dotted path in the writes of this run, then env."""
        if path in self.s.writes:
            return True, self.s.writes[path]
        if path in self.env:
            return True, self.env[path]
        return False, None

    def path_of(self, node: cst.BaseExpression) -> str | None:
        """Dotted rendering of Name/Attribute/Subscript chains (indices evaluated)."""
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            base = self.path_of(node.value)
            return None if base is None else f"{base}.{node.attr.value}"
        if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Name):
            # Accessors such as get_pp_group() can be bound as "get_pp_group().is_last_rank".
            return f"{node.func.value}()"
        if isinstance(node, cst.Subscript) and len(node.slice) == 1:
            elem = node.slice[0].slice
            if isinstance(elem, cst.Index):
                base = self.path_of(node.value)
                if base is None:
                    return None
                index = self.eval(elem.value)
                if isinstance(index, (int, str)) and not isinstance(index, bool):
                    return f"{base}[{index!r}]"
        return None

    def root_is_local(self, node: cst.BaseExpression) -> bool:
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        if not isinstance(node, cst.Name) or node.value not in self.s.locals:
            return False
        # A parameter left symbolic (Unknown with its own name as path) still
        # lets env bind its attributes, e.g. ``forward_batch.can_run_tbo``.
        value = self.s.locals[node.value]
        return not (is_unknown(value) and value.path == node.value)

    # ----------------------------------------------------------- statements
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
            except _Raise as exc:
                raise _Stop(UnknownNote(exc.source, exc.line, "raise inside try: which handler runs is not modelled")) from None
            if node.orelse is not None:
                self.run_block(node.orelse.body)
            if node.finalbody is not None:
                self.run_block(node.finalbody.body)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.s.locals[node.name.value] = Unknown(node.name.value, "a nested definition")
        else:
            raise _Stop(UnknownNote(self.src(node)[:80], self.line(node), f"statement {type(node).__name__} is not modelled", True))

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
            fn = _AUG_OPS.get(type(node.operator))
            self.assign(node.target, self.apply(fn, current, value, node))
        elif isinstance(node, cst.Expr):
            self.eval(node.value)
        elif isinstance(node, cst.Return):
            value = self.eval(node.value) if node.value is not None else None
            raise _Return(value, self.line(node), self.src(node), _exit_condition(self.s))
        elif isinstance(node, cst.Raise):
            raise _Raise(self.line(node), self.src(node), _exit_condition(self.s))
        elif isinstance(node, cst.Assert):
            test = self.truth(self.eval(node.test))
            if test is False:
                raise _Raise(self.line(node), self.src(node), _exit_condition(self.s))
            if is_unknown(test):
                self.note(self.src(node.test), self.line(node), "assert condition could not be evaluated; assumed to hold")
        elif isinstance(node, cst.Pass):
            pass
        elif isinstance(node, cst.Break):
            raise _Break()
        elif isinstance(node, cst.Continue):
            raise _Continue()
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            names = node.names if not isinstance(node.names, cst.ImportStar) else []
            for alias in names:
                name = alias.asname.name if alias.asname else alias.name
                if isinstance(name, cst.Name):
                    self.s.locals[name.value] = Unknown(name.value, "an imported name")
        elif isinstance(node, (cst.Global, cst.Nonlocal, cst.Del)):
            pass
        else:
            raise _Stop(UnknownNote(self.src(node)[:80], self.line(node), f"statement {type(node).__name__} is not modelled", True))

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
        if path is None or self.root_is_local(target):
            self.note(self.src(target), self.line(target), "assignment target could not be resolved")
            return
        unknown = _first_unknown(value)
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
        body_exits = _contains_exit(node.body)
        else_exits = node.orelse is not None and _contains_exit(node.orelse)
        if self.watch_path is not None and self.loops_run == 0 and body_exits != else_exits:
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
            raise _Stop(UnknownNote(condition, line, f"cannot decide `{condition}` ({test.why}) and one side leaves the function", True))
        self.note(condition, line, f"branch condition could not be evaluated: {test.why}")
        base = self.s
        sides = []
        for side in (node.body, node.orelse):
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

    def merge(self, base: _State, a: _State, b: _State, condition: str, line: int) -> _State:
        merged = base.fork()
        why = f"depends on `{condition}` (line {line}), which could not be evaluated"
        for attr in ("locals", "writes"):
            left, right = getattr(a, attr), getattr(b, attr)
            out = {}
            for key in list(left) + [k for k in right if k not in left]:
                if key in left and key in right and _same(left[key], right[key]):
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
            key = _event_key if attr == "events" else (lambda item: item)
            left_keys, right_keys = [key(i) for i in left], [key(i) for i in right]
            combined = list(getattr(base, attr))
            for item in left:
                if key(item) in right_keys or attr in ("branches", "visited"):
                    combined.append(item)
                else:
                    combined.append(_with_condition(item, condition))
            for item in right:
                if key(item) not in left_keys:
                    combined.append(item if attr in ("branches", "visited") else _with_condition(item, condition))
            setattr(merged, attr, combined)
        return merged

    def iterate(self, iterable: Any, node: cst.CSTNode) -> Any:
        if isinstance(iterable, (list, tuple, range, str, set, frozenset)):
            return list(iterable)
        if isinstance(iterable, dict):
            return list(iterable.keys())
        return Unknown(self.src(node), iterable.why if is_unknown(iterable) else f"cannot iterate over {type(iterable).__name__}")

    def run_for(self, node: cst.For) -> None:
        items = self.iterate(self.eval(node.iter), node.iter)
        line = self.line(node)
        is_capture_loop = node in self.capture_loops
        if is_unknown(items):
            if is_capture_loop:
                self.loops_unknown += 1
            self.note(self.src(node.iter), line, f"loop range could not be evaluated: {items.why}", True)
            if _contains_exit(node.body):
                raise _Stop(UnknownNote(self.src(node.iter), line, "loop over an unknown range contains a return/raise"))
            return
        self.loop_depth += 1
        try:
            for item in items:
                self.tick()
                self.assign(node.target, item)
                if is_capture_loop:
                    first = item[0] if isinstance(item, tuple) and item else item
                    self.s.visited.append(first)
                    self.visit_stack.append(first)
                try:
                    self.run_block(node.body)
                except _Continue:
                    continue
                except _Break:
                    break
                finally:
                    if is_capture_loop:
                        self.visit_stack.pop()
            else:
                if node.orelse is not None:
                    self.run_block(node.orelse.body)
        finally:
            self.loop_depth -= 1
        if is_capture_loop:
            self.loops_run += 1

    def run_while(self, node: cst.While) -> None:
        for _ in range(10_000):
            test = self.truth(self.eval(node.test))
            if test is False:
                return
            if is_unknown(test):
                raise _Stop(UnknownNote(self.src(node.test), self.line(node), f"while condition could not be evaluated: {test.why}"))
            try:
                self.run_block(node.body)
            except _Continue:
                continue
            except _Break:
                return
        raise _Stop(UnknownNote(self.src(node.test), self.line(node), "while loop did not end"))

    # ----------------------------------------------------------- expressions
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
        try:
            return fn(left, right)
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
            value = self.eval(part.expression)
            if is_unknown(value) or part.format_spec or part.conversion:
                return self.unknown(node, "f-string with a part that could not be evaluated")
            if part.equal is not None:
                parts.append(f"{self.src(part.expression)}={value!r}")
            else:
                parts.append(str(value))
        return "".join(parts)

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
                raise _Raise(self.line(node), f"IndexError: {self.src(node)} with index {key} on a sequence of length {len(base)}",
                             _exit_condition(self.s))
            try:
                return base[key]
            except (IndexError, KeyError, TypeError) as exc:
                return self.unknown(node, f"{type(exc).__name__}: {exc}")
        lower, upper, step = (self.eval(elem.lower), self.eval(elem.upper), self.eval(elem.step))
        for value in (base, lower, upper, step):
            if is_unknown(value):
                return Unknown(self.src(node), value.why)
        try:
            return base[lower:upper:step]
        except TypeError as exc:
            return self.unknown(node, f"TypeError: {exc}")

    def eval_BinaryOperation(self, node: cst.BinaryOperation) -> Any:
        return self.apply(_BIN_OPS.get(type(node.operator)), self.eval(node.left), self.eval(node.right), node)

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
        left_node = node.left
        for target in node.comparisons:
            right = self.eval(target.comparator)
            outcome = self.compare(target.operator, left, right, node)
            self.watch(target, left, right, outcome, left_node, node)
            if outcome is False:
                return False
            if is_unknown(outcome):
                result = outcome
            left, left_node = right, target.comparator
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
            try:
                found = left in right
            except TypeError as exc:
                return self.unknown(node, f"TypeError: {exc}")
            return found if isinstance(op, cst.In) else not found
        fn = _CMP_OPS.get(type(op))
        value = self.apply(fn, left, right, node)
        return value

    def watch(self, target: cst.ComparisonTarget, left: Any, right: Any, outcome: Any, left_node: cst.CSTNode, node: cst.CSTNode) -> None:
        """Record `i in <watched state>` tests: the capture events of a decoder loop."""
        if self.watch_path is None or not isinstance(target.operator, cst.In):
            return
        if self.path_of(target.comparator) != self.watch_path:
            return
        line = self.line(node)
        if outcome is True and isinstance(left, int) and not isinstance(left, bool):
            # Undecidable conditions are attached when the branches are merged.
            self.s.events.append(CaptureEvent(left, line, self.loop_depth > 0))
        elif is_unknown(outcome):
            self.capture_unknown += 1
            self.note(self.src(node), line, f"capture test could not be evaluated: {outcome.why}", True)

    def watch_marker(self, name: str, value: Any, node: cst.CSTNode) -> None:
        """Record a per-layer marker read (``getattr(layer, marker, False)``) in a capture loop."""
        if self.marker is None or name != self.marker or not self.visit_stack:
            return
        if value is True:
            self.s.events.append(CaptureEvent(self.visit_stack[-1], self.line(node), True))
        elif is_unknown(value):
            self.capture_unknown += 1
            self.note(self.src(node), self.line(node), f"capture test could not be evaluated: {value.why}", True)

    def eval_IfExp(self, node: cst.IfExp) -> Any:
        test = self.truth(self.eval(node.test))
        if test is True:
            return self.eval(node.body)
        if test is False:
            return self.eval(node.orelse)
        body, orelse = self.eval(node.body), self.eval(node.orelse)
        if _same(body, orelse):
            return body
        return Unknown(self.src(node), f"depends on {test.expr}: {test.why}")

    def eval_List(self, node: cst.List) -> Any:
        return self.sequence(node)

    def eval_Tuple(self, node: cst.Tuple) -> Any:
        value = self.sequence(node)
        return tuple(value) if isinstance(value, list) else value

    def eval_Set(self, node: cst.Set) -> Any:
        value = self.sequence(node)
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
            key = self.eval(element.key)
            if is_unknown(key):
                return Unknown(self.src(node), key.why)
            out[key] = self.eval(element.value)
        return out

    def comprehension(self, node: Any, produce: Any) -> Any:
        saved = self.s.locals
        self.s.locals = dict(saved)
        results: list = []
        try:
            failure = self._comp_for(node.for_in, produce, results)
        finally:
            self.s.locals = saved
        return failure if failure is not None else results

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

    # ----------------------------------------------------------- calls
    def eval_Call(self, node: cst.Call) -> Any:
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
            receiver = self.eval(func.value)
            if isinstance(receiver, (list, dict, str, tuple, set, int, float)) and not isinstance(receiver, bool):
                value = self.plain_method(receiver, method, args, kwargs, node)
                if value is not _NOT_PLAIN:
                    return value
            self.record_call(receiver_path or self.src(func.value), method, args, kwargs, node)
            return self.unknown(node, f"result of `.{method}(...)`, which the evaluator does not follow")
        self.record_call(None, self.src(func), args, kwargs, node)
        return self.unknown(node, "result of a call the evaluator does not follow")

    def record_call(self, receiver: str | None, method: str, args: list, kwargs: dict, node: cst.Call) -> None:
        line = self.line(node)
        for value in list(args) + list(kwargs.values()):
            if is_unknown(value) and receiver is not None and receiver.startswith("self"):
                self.note(value.expr, line, f"argument of {receiver}.{method}: {value.why}")
        self.s.calls.append(Call(receiver, method, tuple(copy.deepcopy(args)), tuple(kwargs.items()), line, self.src(node)))

    def getenv(self, node: cst.Call, args: list) -> Any:
        environ = self.env.get("os.environ")
        if not isinstance(environ, dict) or not args or is_unknown(args[0]):
            return self.unknown(node, "environment variables are not bound (bind `os.environ`)")
        default = args[1] if len(args) > 1 else None
        return environ.get(args[0], default)

    def plain_method(self, receiver: Any, method: str, args: list, kwargs: dict, node: cst.Call) -> Any:
        if any(is_unknown(a) for a in args) and method not in ("append", "extend", "insert", "get"):
            return self.unknown(node, "argument could not be evaluated")
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
            allowed = {
                list: ("index", "count", "copy"),
                tuple: ("index", "count"),
                dict: ("keys", "values", "items", "copy"),
                str: ("split", "join", "strip", "lower", "upper", "startswith", "endswith", "format", "replace", "rsplit", "lstrip", "rstrip"),
                set: ("union", "intersection", "difference", "copy"),
            }
            if method in allowed.get(type(receiver), ()):
                result = getattr(receiver, method)(*args, **kwargs)
                return list(result) if method in ("keys", "values", "items") else result
        except Exception as exc:  # noqa: BLE001
            return self.unknown(node, f"{type(exc).__name__}: {exc}")
        return _NOT_PLAIN

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
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            return self.unknown(node, f"{type(exc).__name__}: {exc}")

    def builtin_len(self, node, args, kwargs):
        if args and isinstance(args[0], Obj):
            try:
                return args[0].attr("__len__")
            except KeyError:
                return self.unknown(node, f"length of {args[0].name} is not known")
        return self._pure(node, len, args, kwargs)

    def builtin_list(self, node, args, kwargs):
        if args:
            items = self.iterate(args[0], node)
            return items if is_unknown(items) else list(items)
        return []

    def builtin_tuple(self, node, args, kwargs):
        value = self.builtin_list(node, args, kwargs)
        return value if is_unknown(value) else tuple(value)

    def builtin_set(self, node, args, kwargs):
        return self._pure(node, set, args, kwargs)

    def builtin_sorted(self, node, args, kwargs):
        if "key" in kwargs:
            return self.unknown(node, "sorted with a key function")
        return self._pure(node, sorted, args, kwargs)

    def builtin_reversed(self, node, args, kwargs):
        return self._pure(node, lambda x: list(reversed(x)), args, kwargs)

    def builtin_min(self, node, args, kwargs):
        return self._pure(node, min, args, kwargs)

    def builtin_max(self, node, args, kwargs):
        return self._pure(node, max, args, kwargs)

    def builtin_sum(self, node, args, kwargs):
        return self._pure(node, sum, args, kwargs)

    def builtin_abs(self, node, args, kwargs):
        return self._pure(node, abs, args, kwargs)

    def builtin_any(self, node, args, kwargs):
        return self._pure(node, any, args, kwargs)

    def builtin_all(self, node, args, kwargs):
        return self._pure(node, all, args, kwargs)

    def builtin_int(self, node, args, kwargs):
        return self._pure(node, int, args, kwargs)

    def builtin_float(self, node, args, kwargs):
        return self._pure(node, float, args, kwargs)

    def builtin_str(self, node, args, kwargs):
        return self._pure(node, str, args, kwargs)

    def builtin_bool(self, node, args, kwargs):
        if args and isinstance(args[0], Obj):
            return True
        return self._pure(node, bool, args, kwargs)

    def builtin_range(self, node, args, kwargs):
        return self._pure(node, range, args, kwargs)

    def builtin_enumerate(self, node, args, kwargs):
        if not args:
            return self.unknown(node, "enumerate without arguments")
        items = self.iterate(args[0], node)
        if is_unknown(items):
            return items
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        if is_unknown(start):
            return Unknown(self.src(node), start.why)
        return [(start + n, item) for n, item in enumerate(items)]

    def builtin_zip(self, node, args, kwargs):
        lists = [self.iterate(a, node) for a in args]
        for items in lists:
            if is_unknown(items):
                return items
        return [tuple(group) for group in zip(*lists, strict=False)]

    def builtin_isinstance(self, node, args, kwargs):
        return self.unknown(node, "isinstance is not modelled")

    def builtin_getattr(self, node, args, kwargs):
        if len(args) < 2 or is_unknown(args[1]) or not isinstance(args[1], str):
            return self.unknown(node, "getattr with an unknown name")
        obj, name = args[0], args[1]
        has_default = len(args) > 2
        default = args[2] if has_default else None
        obj_node = node.args[0].value
        if not self.root_is_local(obj_node):
            path = self.path_of(obj_node)
            if path is not None:
                found, value = self.lookup_path(f"{path}.{name}")
                if value is ABSENT:
                    return default if has_default else self.unknown(node, f"`{path}.{name}` does not exist")
                if found:
                    return value
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
            if has_default:
                return default
            return self.unknown(node, f"`{name}` is not in the bound config")
        if isinstance(obj, Obj):
            try:
                value = obj.attr(name)
            except KeyError:
                if obj.closed and has_default:
                    value = default
                else:
                    return self.unknown(node, f"attribute `{name}` of {obj.name} is not known")
            self.watch_marker(name, value, node)
            return value
        if is_unknown(obj) and obj.path is not None:
            return Unknown(self.src(node), f"`{obj.path}.{name}` is not bound", f"{obj.path}.{name}")
        return self.unknown(node, "getattr on a value that is not bound")

    def builtin_hasattr(self, node, args, kwargs):
        if len(args) < 2 or not isinstance(args[1], str):
            return self.unknown(node, "hasattr with an unknown name")
        obj, name = args[0], args[1]
        obj_node = node.args[0].value
        if not self.root_is_local(obj_node):
            path = self.path_of(obj_node)
            if path is not None:
                found, value = self.lookup_path(f"{path}.{name}")
                if found:
                    return value is not ABSENT and not is_unknown(value)
        if isinstance(obj, Obj):
            if name in obj.methods or any(key == name for key, _ in obj.attrs):
                return True
            if obj.closed:
                return False
            return self.unknown(node, f"whether {obj.name} has `{name}` is not known")
        if isinstance(obj, dict) and name in obj:
            return True
        # A config class may define attributes that its config.json omits.
        return self.unknown(node, "hasattr is unknown unless the attribute is bound")

    def builtin_setattr(self, node, args, kwargs):
        if len(args) != 3 or not isinstance(args[1], str):
            return self.unknown(node, "setattr with an unknown name")
        obj_node = node.args[0].value
        path = self.path_of(obj_node)
        if path is None or self.root_is_local(obj_node):
            self.note(self.src(node), self.line(node), "setattr target could not be resolved")
            return None
        self.s.writes[f"{path}.{args[1]}"] = args[2]
        self.s.write_lines[f"{path}.{args[1]}"] = self.line(node)
        return None

    def builtin_print(self, node, args, kwargs):
        self.record_call(None, "print", args, kwargs, node)


_NOT_PLAIN = object()


def _first_unknown(value: Any) -> Unknown | None:
    """The first Unknown in a value or inside a list/tuple/dict it holds."""
    if is_unknown(value):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    else:
        return None
    for item in items:
        found = _first_unknown(item)
        if found is not None:
            return found
    return None


def contains_unknown(value: Any) -> bool:
    return _first_unknown(value) is not None


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and a == b
    except Exception:  # noqa: BLE001
        return False


def _event_key(event: CaptureEvent) -> tuple:
    # The same index captured on both sides of an undecidable branch is captured either way.
    return (event.index, event.in_loop)


def _with_condition(item: Any, condition: str) -> Any:
    if isinstance(item, (Call, CaptureEvent)) and item.condition is None:
        return type(item)(**{**item.__dict__, "condition": condition})
    return item


# ------------------------------------------------------------------- parsing


def _parse_function(source: str) -> tuple:
    """Parse one (possibly indented) function definition."""
    # Leading blank lines would shift every reported line away from ``first_line``.
    text = textwrap.dedent(source).lstrip("\n")
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    module = wrapper.module
    functions = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    if len(functions) != 1:
        raise ValueError(f"expected one function definition, found {len(functions)}")
    return module, positions, functions[0]


def _bind_params(interp: _Interpreter, function: cst.FunctionDef, args: Mapping[str, Any]) -> None:
    params = function.params
    ordered = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    names = set()
    for param in ordered:
        name = param.name.value
        names.add(name)
        if name == "self" or name == "cls":
            continue
        if name in args:
            interp.s.locals[name] = copy.deepcopy(args[name])
        elif param.default is not None:
            interp.s.locals[name] = interp.eval(param.default)
        else:
            interp.s.locals[name] = Unknown(name, f"parameter `{name}` was not given")
    extra = set(args) - names
    if extra and isinstance(params.star_kwarg, cst.Param):
        interp.s.locals[params.star_kwarg.name.value] = {k: args[k] for k in extra}
    elif extra:
        raise ValueError(f"unknown parameters {sorted(extra)} for {function.name.value}")


def _exit_condition(state: _State) -> str | None:
    return " and ".join(state.conditions) or None


def evaluate_function(
    source: str,
    *,
    args: Mapping[str, Any],
    env: Mapping[str, Any],
    first_line: int = 1,
) -> Outcome:
    """Evaluate one function's source on the given argument values.

    ``env`` binds dotted names read by the body (``self.config`` to a config
    dict, ``self.pp_group.is_last_rank`` to a bool, ``os.environ`` to a dict);
    ``first_line`` is the file line of the ``def`` so reported lines are file
    lines.
    """
    module, positions, function = _parse_function(source)
    interp = _Interpreter(module, positions, env, first_line)
    return _run(interp, function, args)


def _run(interp: _Interpreter, function: cst.FunctionDef, args: Mapping[str, Any]) -> Outcome:
    returned = raised = None
    return_value = None
    complete = True
    stopped = None
    body = function.body.body
    try:
        _bind_params(interp, function, args)
        interp.run_block(body)
    except _Return as ret:
        return_value = ret.value
        condition = ret.condition
        last = body[-1] if body else None
        is_last = (
            isinstance(last, cst.SimpleStatementLine)
            and any(isinstance(s, cst.Return) for s in last.body)
            and interp.line(last) == ret.line
        )
        if not is_last:
            returned = Exit("return", ret.line, condition, ret.source)
    except _Raise as exc:
        raised = Exit("raise", exc.line, exc.condition, exc.source)
    except _Stop as stop:
        complete = False
        stopped = stop.note
        interp.note(stop.note.expr, stop.note.line, stop.note.why)
    except (_Break, _Continue):
        complete = False
    return Outcome(
        writes=dict(interp.s.writes),
        calls=tuple(interp.s.calls),
        returned_early=returned,
        raised=raised,
        return_value=return_value,
        branches=tuple(interp.s.branches),
        unknowns=tuple(interp.unknowns),
        complete=complete,
        stopped=stopped,
        write_lines=dict(interp.s.write_lines),
    )


def _capture_loops(function: cst.FunctionDef, module: cst.Module, watch_path: str, marker: str | None = None) -> tuple:
    """For loops whose body tests membership in ``watch_path`` (or reads the per-layer ``marker``)."""
    watched = watch_path

    def renders(node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            base = renders(node.value)
            return None if base is None else f"{base}.{node.attr.value}"
        return None

    class LoopFinder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: list = []
            self.loops: set = set()
            self.kinds: set = set()

        def visit_For(self, node: cst.For) -> None:
            self.stack.append(node)

        def leave_For(self, node: cst.For) -> None:
            self.stack.pop()

        def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
            if isinstance(node.operator, cst.In) and renders(node.comparator) == watched and self.stack:
                self.loops.add(self.stack[-1])
                self.kinds.add("list")

        def visit_Call(self, node: cst.Call) -> None:
            if (
                marker
                and self.stack
                and isinstance(node.func, cst.Name)
                and node.func.value == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1].value, cst.SimpleString)
                and node.args[1].value.evaluated_value == marker
            ):
                self.loops.add(self.stack[-1])
                self.kinds.add("marker")

    finder = LoopFinder()
    function.visit(finder)
    return frozenset(finder.loops), tuple(sorted(finder.kinds))


def captured_indices(
    forward_source: str,
    layers_to_capture: Any,
    env: Mapping[str, Any],
    *,
    state_path: str = "self.layers_to_capture",
    args: Mapping[str, Any] | None = None,
    first_line: int = 1,
    marker_attribute: str | None = None,
) -> CaptureResult:
    """Run a forward method's decoder loop on ``layers_to_capture``.

    Returns the loop indices visited and the entries of ``layers_to_capture``
    really hit, in order. The index ``i`` captured is the hidden state entering
    layer ``i`` (the output of layer ``i - 1``; 0 is the embedding output).
    Tests of ``state_path`` outside the loop (e.g. a capture at the final norm
    with ``self.end_layer``) are reported as events with ``in_loop=False``.
    """
    module, positions, function = _parse_function(forward_source)
    bound = dict(env)
    bound[state_path] = list(layers_to_capture) if not is_unknown(layers_to_capture) else layers_to_capture
    loops, tested_by = _capture_loops(function, module, state_path, marker_attribute)
    interp = _Interpreter(module, positions, bound, first_line, watch_path=state_path, capture_loops=loops, marker=marker_attribute)
    call_args = dict(args or {})
    for param in function.params.params:
        name = param.name.value
        if name != "self":
            call_args.setdefault(name, Unknown(name, "a runtime argument of forward", name))
    outcome = _run(interp, function, call_args)
    state = interp.s
    events = tuple(state.events)
    seen: list = []
    captured: list = []
    # A loop visits each i once, so duplicate entries collapse to one capture.
    per_visit: set = set()
    for event in events:
        key = (event.index, event.line if not event.in_loop else None)
        if event.in_loop:
            if (event.index, "loop") in per_visit:
                continue
            per_visit.add((event.index, "loop"))
        elif key in per_visit:
            continue
        else:
            per_visit.add(key)
        captured.append(event.index)
        seen.append(event.index)
    entries = layers_to_capture if isinstance(layers_to_capture, (list, tuple)) else []
    unknowns = [u for u in outcome.unknowns if u.affects_capture]
    if outcome.stopped is not None and interp.loops_run and not interp.loops_unknown:
        # Stopping after every capture loop ran (e.g. at `if len(aux) == 0: return`) loses nothing.
        unknowns = [u for u in unknowns if u != outcome.stopped]
    if not loops:
        unknowns.append(UnknownNote(state_path, first_line, f"no loop in this function tests `i in {state_path}`"))
    never = tuple(i for i in dict.fromkeys(entries) if i not in seen)
    loop_line = loop_source = None
    if loops:
        first = min(loops, key=lambda n: interp.line(n))
        loop_line = interp.line(first)
        loop_source = module.code_for_node(first).strip().splitlines()[0]
    return CaptureResult(
        visited=tuple(state.visited),
        captured=tuple(captured),
        events=events,
        never_visited=never,
        loop_line=loop_line,
        loop_source=loop_source,
        unknowns=tuple(unknowns),
        # Captures that hang on an undecided condition make the answer incomplete.
        complete=bool(loops) and interp.loops_run > 0 and interp.loops_unknown == 0
        and interp.capture_unknown == 0 and not any(e.condition for e in events),
        tested_by=tested_by,
    )
