"""Control flow of one evaluation: exceptions that carry return/raise/stop, the
operator tables, and the mutable state of one path (copied when a branch forks)."""

from __future__ import annotations

import copy
import operator
from typing import Any

import libcst as cst

from tracer.interp.values import UnknownNote

# ---------------------------------------------------------------- control flow


class Return(Exception):
    def __init__(self, value: Any, line: int, source: str, condition: str | None = None):
        self.value, self.line, self.source, self.condition = value, line, source, condition


class Raise(Exception):
    def __init__(self, line: int, source: str, condition: str | None = None):
        self.line, self.source, self.condition = line, source, condition


class Stop(Exception):
    def __init__(self, note: UnknownNote):
        self.note = note


class Break(Exception):
    pass


class Continue(Exception):
    pass


BIN_OPS = {
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
AUG_OPS = {
    cst.AddAssign: operator.add,
    cst.SubtractAssign: operator.sub,
    cst.MultiplyAssign: operator.mul,
    cst.DivideAssign: operator.truediv,
    cst.FloorDivideAssign: operator.floordiv,
    cst.ModuloAssign: operator.mod,
    cst.PowerAssign: operator.pow,
}
CMP_OPS = {
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.LessThan: operator.lt,
    cst.GreaterThan: operator.gt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThanEqual: operator.ge,
}


class State:
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

    def fork(self) -> State:
        other = State()
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


def contains_exit(node: cst.CSTNode) -> bool:
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


def exit_condition(state: State) -> str | None:
    return " and ".join(state.conditions) or None
