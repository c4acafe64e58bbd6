"""The capture-loop observer: which entries of the state a decoder loop really
captures. The interpreter runs the forward; the observer, handed to it, records
the ``i in self.layers_to_capture`` tests (and per-layer marker reads) that
decide a capture, and which capture loops ran over a known range."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from tracer.interp import budget
from tracer.interp.interpreter import Interpreter, parse_function, run_function, too_long
from tracer.interp.values import CaptureEvent, CaptureResult, Unknown, UnknownNote, is_unknown


@dataclass
class CaptureObserver:
    watch_path: str
    capture_loops: frozenset  # type: ignore[type-arg]
    marker: str | None = None
    visit_stack: list = field(default_factory=list)  # type: ignore[type-arg]  # loop index of the capture loops being run
    loops_run: int = 0  # capture loops run over a known range
    loops_unknown: int = 0  # capture loops whose range could not be evaluated
    capture_unknown: int = 0  # capture tests that could not be decided
    # per capture loop: (first line, last line, last line of the body statement that runs the layer)
    layer_calls: dict = field(default_factory=dict)  # type: ignore[type-arg]
    loop_stack: list = field(default_factory=list)  # type: ignore[type-arg]  # capture loops being run

    def output_of(self, index: int, line: int) -> int | None:
        """The layer whose output a capture at ``line`` holds, in the capture loop being run:
        the visited layer itself when its call ran earlier in this iteration, else the one
        before it. None outside a capture loop or when the loop's layer call is not known."""
        if not self.visit_stack or not self.loop_stack:
            return None
        span = self.layer_calls.get(self.loop_stack[-1])
        visit = self.visit_stack[-1]
        if span is None or not isinstance(visit, int) or isinstance(visit, bool):
            return None
        first, last, called = span
        if not first <= line <= last or called is None:
            return None
        return visit if line > called else visit - 1

    def on_comparison(self, interp: Any, target: cst.ComparisonTarget, left: Any, outcome: Any, node: cst.CSTNode) -> None:
        """Record `i in <watched state>` tests: the capture events of a decoder loop."""
        if self.watch_path is None or not isinstance(target.operator, cst.In):
            return
        if interp.path_of(target.comparator) != self.watch_path:
            return
        line = interp.line(node)
        if outcome is True and isinstance(left, int) and not isinstance(left, bool):
            # Undecidable conditions are attached when the branches are merged.
            interp.s.events.append(CaptureEvent(left, line, interp.loop_depth > 0, output=self.output_of(left, line)))
        elif is_unknown(outcome):
            self.capture_unknown += 1
            interp.note(interp.src(node), line, f"capture test could not be evaluated: {outcome.why}", True)

    def on_marker(self, interp: Any, name: str, value: Any, node: cst.CSTNode) -> None:
        """Record a per-layer marker read (``getattr(layer, marker, False)``) in a capture loop."""
        if self.marker is None or name != self.marker or not self.visit_stack:
            return
        if value is True:
            line = interp.line(node)
            interp.s.events.append(CaptureEvent(self.visit_stack[-1], line, True,
                                                output=self.output_of(self.visit_stack[-1], line)))
        elif is_unknown(value):
            self.capture_unknown += 1
            interp.note(interp.src(node), interp.line(node), f"capture test could not be evaluated: {value.why}", True)


def _capture_loops(function: cst.FunctionDef, module: cst.Module, watch_path: str, marker: str | None = None,
                   helpers: frozenset = frozenset()) -> tuple:  # type: ignore[type-arg]
    """For loops whose body tests membership in ``watch_path`` (or reads the per-layer ``marker``,
    or calls one of the ``helpers`` of self that test it)."""
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
            func = node.func
            if (self.stack and isinstance(func, cst.Attribute) and func.attr.value in helpers
                    and isinstance(func.value, cst.Name) and func.value.value == "self"):
                self.loops.add(self.stack[-1])
                self.kinds.add("list")
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


def _runs_layer(statement: cst.CSTNode, loop: cst.For) -> bool:
    """Whether a loop-body statement runs the layer: calls the loop's target name
    (``layer(...)``) or an item of a ``layers`` attribute (``self.layers[i](...)``), or a
    method of either (``self.layers[i].forward_fused(...)``)."""
    names = {n.value for n in _target_names(loop.target)}

    class Finder(cst.CSTVisitor):
        found = False

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute):  # layer.forward_fused(...), self.layers[i].forward(...)
                func = func.value
            if isinstance(func, cst.Name) and func.value in names:
                self.found = True
            elif (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute)
                  and func.value.attr.value == "layers"):
                self.found = True

    finder = Finder()
    statement.visit(finder)
    return finder.found


def _target_names(target: cst.BaseExpression) -> list:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _layer_calls(loops: frozenset, interp: Interpreter) -> dict:  # type: ignore[type-arg]
    """Per capture loop: its lines and the last line of the first body statement that runs
    the layer (None when no statement visibly does)."""
    spans = {}
    for loop in loops:
        body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
        first = interp.line(loop)
        pos = interp.positions.get(loop)
        last = (pos.end.line + interp.line_offset) if pos else first
        called = None
        for statement in body:
            if _runs_layer(statement, loop):
                spot = interp.positions.get(statement)
                called = (spot.end.line + interp.line_offset) if spot else None
                break
        spans[loop] = (first, last, called)
    return spans


def captured_indices(
    forward_source: str,
    layers_to_capture: Any,
    env: Mapping[str, Any],
    *,
    state_path: str = "self.layers_to_capture",
    args: Mapping[str, Any] | None = None,
    first_line: int = 1,
    marker_attribute: str | None = None,
    helpers: Mapping[str, tuple[str, int]] | None = None,
) -> CaptureResult:
    """Run a forward method's decoder loop on ``layers_to_capture``.

    Returns the loop indices visited and the entries of ``layers_to_capture``
    really hit, in order. The index ``i`` captured is the hidden state entering
    layer ``i`` (the output of layer ``i - 1``; 0 is the embedding output).
    Tests of ``state_path`` outside the loop (e.g. a capture at the final norm
    with ``self.end_layer``) are reported as events with ``in_loop=False``.
    """
    if len(forward_source) > budget.MAX_FUNCTION_SOURCE:
        note = UnknownNote("<forward>", first_line, too_long(forward_source), True)
        return CaptureResult(visited=(), captured=(), events=(), never_visited=(), loop_line=None, loop_source=None,
                             unknowns=(note,), complete=False)
    module, positions, function = parse_function(forward_source)
    bound = dict(env)
    bound[state_path] = list(layers_to_capture) if not is_unknown(layers_to_capture) else layers_to_capture
    loops, tested_by = _capture_loops(function, module, state_path, marker_attribute, frozenset(helpers or ()))
    observer = CaptureObserver(state_path, loops, marker_attribute)
    interp = Interpreter(module, positions, bound, first_line, observer)
    interp.helpers = dict(helpers or {})
    observer.layer_calls = _layer_calls(loops, interp)
    call_args = dict(args or {})
    for param in function.params.params:
        name = param.name.value
        if name != "self":
            call_args.setdefault(name, Unknown(name, "a runtime argument of forward", name))
    outcome = run_function(interp, function, call_args)
    state = interp.s
    events = tuple(state.events)
    seen: list = []
    captured: list = []
    outputs: list = []
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
        outputs.append(event.output if event.output is not None else event.index - 1)
        seen.append(event.index)
    entries = layers_to_capture if isinstance(layers_to_capture, (list, tuple)) else []
    unknowns = [u for u in outcome.unknowns if u.affects_capture]
    if outcome.stopped is not None and observer.loops_run and not observer.loops_unknown:
        # Stopping after every capture loop ran (e.g. at `if len(aux) == 0: return`) loses nothing.
        unknowns = [u for u in unknowns if u != outcome.stopped]
    if outcome.stopped is not None and "budget" in outcome.stopped.why and outcome.stopped not in unknowns:
        unknowns.append(outcome.stopped)  # the loop stopped half-way: say why
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
        complete=bool(loops) and observer.loops_run > 0 and observer.loops_unknown == 0
        and observer.capture_unknown == 0 and not any(e.condition for e in events),
        tested_by=tested_by,
        outputs=tuple(outputs),
    )
