"""A small abstract interpreter over the CST of one function.

It runs setter bodies and decoder-layer loops on concrete config values without
importing or executing the scanned code. Values are plain Python data (ints,
strings, lists, dicts standing for configs), :class:`Obj` for objects known to
exist, and :class:`Unknown` for anything the interpreter cannot evaluate. An
``Unknown`` is never guessed into a value: it propagates, and where it decides a
write, a call argument or a branch it is reported with the expression, the line
and the reason. Statements, expressions and builtins are mixins in their own
modules; the capture-loop observer is capture.py.
"""

from __future__ import annotations

import copy
import functools
import textwrap
from collections.abc import Mapping
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tracer.interp import budget
from tracer.interp.builtins import Builtins
from tracer.interp.control import Break, Continue, Raise, Return, Stop
from tracer.interp.expressions import Expressions
from tracer.interp.statements import Statements
from tracer.interp.values import Exit, Outcome, Unknown, UnknownNote


class Interpreter(Statements, Expressions, Builtins):
    """One function's evaluation: the statement, expression and builtin mixins over
    the shared core; ``observer`` (capture.py) watches the capture tests of a forward."""

    def run_helper(self, name: str, args: list, kwargs: dict, node: cst.Call) -> Any:
        """Run ``self.<name>(...)`` in place: a helper of the forward, with the same bindings
        and observer; its capture events and notes join this run's (one level: the helper's
        own helpers are not followed)."""
        source, first_line = self.helpers[name]
        if len(source) > budget.MAX_FUNCTION_SOURCE:
            return self.unknown(node, f"`self.{name}(...)`: {too_long(source)}")
        module, positions, function = parse_function(source)
        inner = Interpreter(module, positions, self.env, first_line, self.observer)
        inner.loop_depth = self.loop_depth
        inner.work, inner.steps = self.work, self.steps  # the helper spends this evaluation's budget
        params = [p.name.value for p in list(function.params.posonly_params) + list(function.params.params)]
        bound = dict(zip([p for p in params if p not in ("self", "cls")], args, strict=False))
        bound.update(kwargs)
        try:
            outcome = run_function(inner, function, bound)
        except ValueError as exc:
            return self.unknown(node, f"`self.{name}(...)` could not be run: {exc}")
        self.work, self.steps = inner.work, inner.steps
        self.charge(0)  # a helper that spent the budget stops this evaluation too
        self.s.events.extend(inner.s.events)
        for note in inner.unknowns:
            self.note(note.expr, note.line, note.why, note.affects_capture)
        if not outcome.complete:
            return self.unknown(node, f"`self.{name}(...)` could not be run to its end")
        return outcome.return_value


def too_long(source: str) -> str:
    return (f"a function of {len(source) // 1024:,} KiB, past the interpreter's budget of "
            f"{budget.MAX_FUNCTION_SOURCE // 1024} KiB (real setters and forwards have a few)")


@functools.lru_cache(maxsize=32)
def parse_function(source: str) -> tuple:
    """Parse one (possibly indented) function definition (memoised: explain evaluates the
    same setter once per configuration and pipeline rank; libcst trees are immutable)."""
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


def _bind_params(interp: Interpreter, function: cst.FunctionDef, args: Mapping[str, Any]) -> None:
    params = function.params
    ordered = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    names = set()
    for param in ordered:
        name = param.name.value
        names.add(name)
        if name == "self" or name == "cls":
            continue
        if name in args:
            interp.s.locals[name] = copy.deepcopy(budget.trim(args[name], name))
        elif param.default is not None:
            interp.s.locals[name] = interp.eval(param.default)
        else:
            interp.s.locals[name] = Unknown(name, f"parameter `{name}` was not given")
    extra = set(args) - names
    if extra and isinstance(params.star_kwarg, cst.Param):
        interp.s.locals[params.star_kwarg.name.value] = {k: args[k] for k in extra}
    elif extra:
        raise ValueError(f"unknown parameters {sorted(extra)} for {function.name.value}")


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
    if len(source) > budget.MAX_FUNCTION_SOURCE:
        note = UnknownNote("<function>", first_line, too_long(source), True)
        return Outcome(writes={}, calls=(), returned_early=None, raised=None, return_value=None, branches=(),
                       unknowns=(note,), complete=False, stopped=note)
    module, positions, function = parse_function(source)
    interp = Interpreter(module, positions, env, first_line)
    return run_function(interp, function, args)


def run_function(interp: Interpreter, function: cst.FunctionDef, args: Mapping[str, Any]) -> Outcome:
    returned = raised = None
    return_value = None
    complete = True
    stopped = None
    body = function.body.body
    try:
        _bind_params(interp, function, args)
        interp.run_block(body)
    except Return as ret:
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
    except Raise as exc:
        raised = Exit("raise", exc.line, exc.condition, exc.source)
    except Stop as stop:
        complete = False
        stopped = stop.note
        interp.note(stop.note.expr, stop.note.line, stop.note.why)
    except (Break, Continue):
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


