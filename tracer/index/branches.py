"""Branches of a forward on which no capture happens.

A forward that captures often has two ways through the decoder layers (a plain
loop and a fused or overlapped path). Read with stdlib ``ast`` from one
function's source: an ``if`` one of whose branches reads the capture state (the
state attribute, or a per-layer marker given as a string) and subscripts a
``self`` container (``self.layers[i]``), while the other branch uses that same
container (``model_forward_stages(layers=self.layers, ...)``) and reads no state:
on that branch the layers run and nothing is captured.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from tracer.index.methods import MAX_SRC, parse_body
from tracer.model.summary import SkippedBranch


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= MAX_SRC else text[: MAX_SRC - 3] + "..."


def _walk(body: Iterable[ast.AST]) -> Iterable[ast.AST]:
    for stmt in body:
        yield from ast.walk(stmt)


def _reads_state(body: Sequence[ast.AST], names: set[str]) -> bool:
    for node in _walk(body):
        if isinstance(node, ast.Attribute) and node.attr in names:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            return True
    return False


def _self_attr(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return ""


def _subscripted(body: Sequence[ast.stmt]) -> set[str]:
    return {_self_attr(n.value) for n in _walk(body) if isinstance(n, ast.Subscript) and _self_attr(n.value)}


def _passes(body: Sequence[ast.stmt], container: str) -> ast.Call | None:
    """The first call in ``body`` handed ``self.<container>`` or a slice of it as an
    argument: the layers run another way (``model_forward_stages(layers=self.layers)``)."""
    for node in _walk(body):
        if not isinstance(node, ast.Call):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if _self_attr(arg) == container or (isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Slice)
                                                and _self_attr(arg.value) == container):
                return node
    return None


def _on_self(func: ast.expr) -> bool:
    """``self.m(...)`` or ``self.part.m(...)``."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "self" and not isinstance(func.ctx, ast.Store)


def _loops_over_self(loop: ast.For | ast.AsyncFor) -> bool:
    """The loop walks a ``self`` container (``islice(self.layers, a, b)``, ``self.layers[a:b]``)."""
    return any(_self_attr(n) for n in ast.walk(loop.iter))


class _Branches(ast.NodeVisitor):
    def __init__(self, names: set[str], offset: int):
        self.names = names
        self.offset = offset
        self.found: list[SkippedBranch] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._block(node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _site(self, node: ast.If, condition: str, call: ast.Call) -> None:
        self.found.append(SkippedBranch(node.lineno + self.offset, node.col_offset, condition,
                                        _src(call), call.lineno + self.offset))

    def _block(self, body: Sequence[ast.stmt]) -> None:
        """Each ``if`` of the block, and (DeepSeek-V2's shape) an ``if`` after a capturing
        loop whose body runs the rest of that loop's container without capture."""
        captured: set[str] = set()  # containers a capturing statement before this one subscripts
        for at, stmt in enumerate(body):
            if isinstance(stmt, ast.If) and not _reads_state([stmt.test], self.names):
                self._if(stmt)
                self._early_return(stmt, body[at + 1:])
                if not stmt.orelse and not _reads_state(stmt.body, self.names):
                    for container in sorted(captured):
                        call = _passes(stmt.body, container)
                        if call is not None:
                            self._site(stmt, _src(stmt.test), call)
                            break
            elif _reads_state([stmt], self.names):
                captured |= _subscripted([stmt])
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) \
                        and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._block(inner)
            for handler in getattr(stmt, "handlers", ()) or ():
                self._block(handler.body)

    def _early_return(self, node: ast.If, rest: Sequence[ast.stmt]) -> None:
        """vLLM Gemma4's shape: ``if self.fast_prefill_enabled: h = self.fast_prefill_forward(...);
        return h`` before the capturing loop. The branch returns before the loop over a ``self``
        container that captures, reads no state, and computes what it returns by a call on
        ``self``: there the layers run another way and nothing is captured."""
        if node.orelse or not node.body or not isinstance(node.body[-1], ast.Return):
            return
        if _reads_state(node.body, self.names):
            return
        loops = [s for s in _walk(rest) if isinstance(s, (ast.For, ast.AsyncFor))
                 and _reads_state(s.body, self.names) and _loops_over_self(s)]
        if not loops:
            return
        call = next((n for n in _walk(node.body) if isinstance(n, ast.Call) and _on_self(n.func)), None)
        if call is not None:
            self._site(node, _src(node.test), call)

    def _if(self, node: ast.If) -> None:
        """An if/else: one branch reads the state and subscripts the container, the other
        hands the same container to a call and reads no state. A test that reads the
        state itself (``if tbo and not self.layers_to_capture``) is no skip."""
        test = _src(node.test)
        simple = isinstance(node.test, (ast.Name, ast.Attribute))
        negated = f"not {test}" if simple else f"not ({test})"
        for capturing, skipping, condition in ((node.body, node.orelse, negated), (node.orelse, node.body, test)):
            if not skipping or not _reads_state(capturing, self.names) or _reads_state(skipping, self.names):
                continue
            for container in sorted(_subscripted(capturing)):
                call = _passes(skipping, container)
                if call is not None:
                    self._site(node, condition, call)
                    return


def skipped_branches(text: str, start: int, end: int, names: Sequence[str]) -> tuple[SkippedBranch, ...]:
    """The branches of the def in lines ``start..end`` of ``text`` that run the layers
    without reading any of ``names`` (the state attribute and its markers)."""
    rows = text.split("\n")[start - 1:end]
    tree, offset = parse_body(rows, start)
    visitor = _Branches(set(names), offset)
    try:
        for node in tree.body:
            visitor.visit(node)
    except RecursionError:
        return ()
    return tuple(visitor.found)


__all__ = ["skipped_branches"]
