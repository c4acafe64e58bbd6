"""The interpreter's shared core (base of the statement, expression and builtin mixins)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import libcst as cst

from tracer.interp import budget
from tracer.interp.control import State, Stop
from tracer.interp.values import Unknown, UnknownNote, is_unknown

_MAX_STEPS = 200_000


class InterpreterCore:
    """What every part of the interpreter shares: the function's CST and positions,
    the environment, the current path's state, and the reporting helpers. The
    statement, expression and builtin mixins derive from it; the methods each one
    provides to the others are declared at the end."""

    def __init__(
        self,
        module: cst.Module,
        positions: Mapping[cst.CSTNode, Any],
        env: Mapping[str, Any],
        first_line: int,
        observer: Any = None,
    ) -> None:
        self.module = module
        self.positions = positions
        self.env = {name: copy.deepcopy(budget.trim(value, name)) for name, value in dict(env).items()}
        self.line_offset = first_line - 1
        self.unknowns: list = []
        self._seen_notes: set = set()
        self.observer = observer
        self.loop_depth = 0
        self.steps = 0
        self.work = 0  # units built or walked (budget.MAX_WORK)
        self._sources: dict = {}
        self.s = State()
        # methods of self run in place when called (name -> (source, first line)): a forward's
        # capture helper such as `self._maybe_add_hidden_state(aux, i + 1, ...)`
        self.helpers: Mapping[str, tuple[str, int]] = {}

    # ----------------------------------------------------------- helpers
    def src(self, node: cst.CSTNode) -> str:
        # libcst's code generation costs ~0.2 ms a node: once per node, not once per step
        text = self._sources.get(node)
        if text is None:
            text = self._sources[node] = self.module.code_for_node(node).strip()
        return text

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
            raise Stop(UnknownNote("<function>", 0, "evaluation exceeded the step limit", True))

    def charge(self, amount: int) -> None:
        """Count ``amount`` units of work; past the evaluation's budget it stops (Unknown)."""
        self.work += amount
        if self.work > budget.MAX_WORK:
            raise Stop(UnknownNote("<function>", 0, f"evaluation exceeded its work budget ({budget.MAX_WORK:,} units)", True))

    def bounded(self, node: cst.CSTNode, value: Any) -> Any:
        """``value``, or Unknown when it is past the size budget (the walk is charged)."""
        if isinstance(value, (bool, float, type(None))) or is_unknown(value):
            return value
        self.charge(budget.units(value))
        why = budget.past(value)
        return value if why is None else self.unknown(node, why)

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


# ------------------------------------------------------------------- parsing

    # ----------------------------------------------------------- provided by the mixins
    def eval(self, node: cst.BaseExpression | None) -> Any:  # expressions.py
        raise NotImplementedError

    def apply(self, fn: Any, left: Any, right: Any, node: cst.CSTNode) -> Any:  # expressions.py
        raise NotImplementedError

    def truth(self, value: Any) -> Any:  # statements.py
        raise NotImplementedError

    def assign(self, target: cst.BaseExpression, value: Any) -> None:  # statements.py
        raise NotImplementedError

    def iterate(self, iterable: Any, node: cst.CSTNode) -> Any:  # statements.py
        raise NotImplementedError

    def _pure(self, node: cst.Call, fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:  # expressions.py
        raise NotImplementedError


    def run_helper(self, name: str, args: list[Any], kwargs: dict[str, Any], node: cst.Call) -> Any:  # interpreter.py
        raise NotImplementedError
