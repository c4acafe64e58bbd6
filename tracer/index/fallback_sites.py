"""Where a runner function substitutes layer ids of its own for the draft's.

Two shapes, read with stdlib ``ast`` from one function's source (never run):

- a ``try`` whose body reads a config key (the key's name as a string:
  ``eagle_config["eagle_aux_hidden_state_layer_ids"]``, ``cfg.get("...")``,
  ``getattr(cfg, "...")``) and a handler that does not re-raise: any error
  there (the key missing, the parent config absent) becomes the handler's value;
- a branch of an ``if`` that calls one of the named fallback functions (a layer
  guesser such as ``build_target_layer_ids``, a model's default-layer method).

What counts as logging is the protocol's to say: each site lists the calls made
in its handler or branch, and the analysis stage decides.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from tracer.index.methods import MAX_SRC, dotted, parse_body
from tracer.model.summary import FallbackSite


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= MAX_SRC else text[: MAX_SRC - 3] + "..."


def _calls(nodes: Iterable[ast.AST]) -> tuple[str, ...]:
    found = []
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                name = dotted(sub.func)
                if name:
                    found.append(name)
    return tuple(dict.fromkeys(found))


def _strings(nodes: Iterable[ast.AST]) -> set[str]:
    return {sub.value for node in nodes for sub in ast.walk(node)
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str)}


def _handler_value(handler: ast.ExceptHandler) -> str:
    for stmt in handler.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            return _src(stmt.value)
        if isinstance(stmt, ast.Return):
            return _src(stmt.value) if stmt.value is not None else "None"
    return ""


def _branch_statements(body: Sequence[ast.stmt]) -> Iterable[ast.AST]:
    """The branch's own statements, not those of ``if`` statements nested in it
    (each nested branch is a site of its own)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield stmt.test
            continue
        yield stmt


class _Sites(ast.NodeVisitor):
    def __init__(self, keys: Sequence[str], fallback_calls: Sequence[str], offset: int, function: str):
        self.keys = tuple(keys)
        self.fallback_calls = set(fallback_calls)
        self.offset = offset
        self.function = function
        self.sites: list[FallbackSite] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Try(self, node: ast.Try) -> None:
        read = sorted(_strings(node.body) & set(self.keys))
        if read:
            for handler in node.handlers:
                raises = any(isinstance(sub, ast.Raise) for stmt in handler.body for sub in ast.walk(stmt))
                caught = f"except {_src(handler.type)}" if handler.type is not None else "except"
                self.sites.append(FallbackSite(
                    "except", self.function, handler.lineno + self.offset, handler.col_offset, read[0], caught,
                    _handler_value(handler), _calls(handler.body), raises))
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_If(self, node: ast.If) -> None:
        """A guesser called in a branch the ids' absence selects: the test reads a key's
        name (``if self.target_layer_ids is None``), or a name the branch then fills with
        the guess (``if aux_layers: ... else: aux_layers = default()``). A guesser under
        an unrelated test (``if supports_eagle3(model)``) is no fallback."""
        test = _src(node.test)
        tested = _names(node.test)
        simple = isinstance(node.test, (ast.Name, ast.Attribute))
        for branch, condition in ((node.body, test), (node.orelse, f"not {test}" if simple else f"not ({test})")):
            if len(branch) == 1 and isinstance(branch[0], ast.If):
                continue  # an elif: its own site
            for stmt in _branch_statements(branch):
                filled = _names_of_targets(stmt)
                for sub in ast.walk(stmt):
                    if not (isinstance(sub, ast.Call) and dotted(sub.func).rpartition(".")[2] in self.fallback_calls):
                        continue
                    if not (tested & set(self.keys) or tested & filled):
                        continue
                    self.sites.append(FallbackSite(
                        "branch", self.function, sub.lineno + self.offset, sub.col_offset,
                        dotted(sub.func), condition, _src(sub), _calls(branch), False))
        self.generic_visit(node)


def _names(node: ast.AST) -> set[str]:
    """Names and attribute names read in an expression (``self.a.b`` gives a and b)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _names_of_targets(stmt: ast.AST) -> set[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return set().union(*(_names(t) for t in targets)) - {"self"} if targets else set()


def fallback_sites(text: str, start: int, end: int, qualname: str, keys: Sequence[str],
                   fallback_calls: Sequence[str]) -> tuple[FallbackSite, ...]:
    """The sites in lines ``start..end`` of ``text`` (one def, decorators included).
    ``keys`` are config key names (the last part of a dotted key)."""
    rows = text.split("\n")[start - 1:end]
    tree, offset = parse_body(rows, start)
    collector = _Sites(keys, fallback_calls, offset, qualname)
    try:
        for node in tree.body:
            collector.visit(node)
    except RecursionError:
        return ()
    return tuple(collector.sites)


__all__ = ["fallback_sites"]
