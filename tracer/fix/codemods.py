"""The codemods: one function per fix the catalogue names (tracer/checks/fixes.py).

Each takes the file's source, the finding's line and the fields read back from its message
and hint, and returns the new source or None (the fix declines: the code is not the shape it
repairs). libcst keeps every other byte of the file; only the statement at the finding's line
changes (``move_before_capture`` moves that statement, ``log_fallback`` adds one line after it).
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

Fields = Mapping[str, str]


class _AtLine(cst.CSTVisitor):
    """The innermost simple statement (and its block) that starts on ``line``."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int):
        self.line = line
        self.statement: cst.SimpleStatementLine | None = None
        self.handler: cst.ExceptHandler | None = None  # an ``except`` clause that starts on ``line``
        self.block: cst.IndentedBlock | cst.Module | None = None
        self._blocks: list[cst.IndentedBlock | cst.Module] = []

    def visit_Module(self, node: cst.Module) -> None:
        self._blocks.append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        self._blocks.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._blocks.pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if self.get_metadata(PositionProvider, node).start.line == self.line:
            self.handler = node

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        where = self.get_metadata(PositionProvider, node)
        if where.start.line <= self.line <= where.end.line:
            self.statement, self.block = node, self._blocks[-1]
        return False


def _find(source: str, line: int) -> tuple[cst.Module, _AtLine] | None:
    try:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    finder = _AtLine(line)
    wrapper.visit(finder)
    return wrapper.module, finder


def _locate(source: str, line: int) -> tuple[cst.Module, cst.SimpleStatementLine, cst.IndentedBlock | cst.Module] | None:
    found = _find(source, line)
    if found is None or found[1].statement is None or found[1].block is None:
        return None
    return found[0], found[1].statement, found[1].block


def _replace_statement(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode | Sequence[cst.CSTNode]) -> str:
    replacement: Any = cst.FlattenSentinel(list(new)) if isinstance(new, Sequence) else new
    updated = module.deep_replace(old, replacement)  # a FlattenSentinel puts several statements in one's place
    assert isinstance(updated, cst.Module)
    return updated.code


def _last(dotted: str) -> str:
    return dotted.strip().strip("`").rsplit(".", 1)[-1]


def _assign_targets(statement: cst.SimpleStatementLine) -> list[cst.BaseExpression]:
    body = statement.body[0] if len(statement.body) == 1 else None
    if isinstance(body, cst.Assign):
        return [t.target for t in body.targets]
    if isinstance(body, (cst.AnnAssign, cst.AugAssign)):
        return [body.target]
    return []


def rename_write(source: str, line: int, fields: Fields) -> str | None:
    """``self.model.layers_to_captur = ...`` -> ``self.model.layers_to_capture = ...``."""
    found = _locate(source, line)
    wanted, written = _last(fields.get("attribute", "")), _last(fields.get("target", ""))
    if found is None or not wanted.isidentifier() or not written.isidentifier() or wanted == written:
        return None
    module, statement, _ = found
    for target in _assign_targets(statement):
        if isinstance(target, cst.Attribute) and target.attr.value == written:
            return _replace_statement(module, target.attr, target.attr.with_changes(value=wanted))
    return None


_DID_YOU_MEAN = re.compile(r"has no (?P<wrong>\w+) \(did you mean (?P<right>\w+)\?\)")


def rename_call(source: str, line: int, fields: Fields) -> str | None:
    """``self.inner.set_layer_to_capture(ids)`` -> the name the inner class defines."""
    match = _DID_YOU_MEAN.search(fields.get("why", ""))
    found = _locate(source, line)
    if match is None or found is None:
        return None
    module, statement, _ = found
    calls = [n for n in _walk(statement) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
             and n.func.attr.value == match["wrong"]]
    if len(calls) != 1:
        return None
    func = calls[0].func
    assert isinstance(func, cst.Attribute)
    return _replace_statement(module, func.attr, func.attr.with_changes(value=match["right"]))


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, child: cst.CSTNode) -> bool:
            found.append(child)
            return True

    node.visit(Collect())
    return found


_LOGGER_FACTORIES = ("getLogger", "init_logger", "get_logger")


def _module_logger(tree: ast.Module) -> str | None:
    """A module-level logger (``logger = logging.getLogger(__name__)``), else ``logging`` when imported."""
    imported = False
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            func = node.value.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _LOGGER_FACTORIES:
                return node.targets[0].id
        if isinstance(node, ast.Import) and any(a.name == "logging" and a.asname is None for a in node.names):
            imported = True
    return "logging" if imported else None


def log_fallback(source: str, line: int, fields: Fields) -> str | None:
    """After the fallback assignment, a warning naming the layers it chose (a ``return <fallback>``
    becomes: the layers in a local, the warning, ``return`` the local)."""
    found = _locate(source, line)
    if found is None:
        return _log_in_handler(source, line, fields)
    module, statement, _ = found
    logger = fields.get("logger")
    small = statement.body[0] if len(statement.body) == 1 else None
    if not logger or small is None:
        return None
    param = fields.get("param") or fields.get("condition") or ""
    where = ".".join(p for p in (fields.get("owner_name"), fields.get("method")) if p) or fields.get("function") or ""
    when = f"{param} is None" if fields.get("param") else param or "the draft config names no layer ids"
    text = f"{where + ': ' if where else ''}{when}; using the fallback layers %s"
    if isinstance(small, cst.Return) and small.value is not None:
        local = next(n for n in (f"fallback_layers{i or ''}" for i in range(100)) if n not in source)
        lines = [f"{local} = {module.code_for_node(small.value)}\n",
                 f"{logger}.warning({_quoted(text)}, {local})\n", f"return {local}\n"]
        new = [cst.parse_statement(code) for code in lines]
        return _replace_statement(module, statement, [new[0].with_changes(leading_lines=statement.leading_lines),
                                                      *new[1:-1], new[-1].with_changes(trailing_whitespace=
                                                                                       statement.trailing_whitespace)])
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        # the fallback handed on (``self.model.set_...([2, n // 2, n - 3])``): log it first, naming the
        # list as the finding does (evaluated twice: only names and constants, no call)
        value = fields.get("value", "")
        try:
            named = cst.parse_expression(value)
        except cst.ParserSyntaxError:
            return None
        if any(isinstance(n, (cst.Call, cst.Await, cst.Yield, cst.NamedExpr)) for n in _walk(named)) or not any(
                module.code_for_node(a.value).split() and _same(module.code_for_node(a.value), value)
                for a in small.value.args):
            return None
        call = cst.parse_statement(f"{logger}.warning({_quoted(text)}, {value})\n")
        return _replace_statement(module, statement, [call.with_changes(leading_lines=statement.leading_lines),
                                                      statement.with_changes(leading_lines=())])
    targets = _assign_targets(statement)
    if len(targets) != 1 or not isinstance(targets[0], (cst.Name, cst.Attribute)) or not isinstance(small, cst.Assign):
        return None
    call = cst.parse_statement(f"{logger}.warning({_quoted(text)}, {module.code_for_node(targets[0])})\n")
    return _replace_statement(module, statement, [statement, call])


def _log_in_handler(source: str, line: int, fields: Fields) -> str | None:
    """The runner's ``except Exception:`` around the read of the ids' key: its first statement becomes a
    warning naming the key and the setter's fallback layers (what it catches is left as it is)."""
    found, logger = _find(source, line), fields.get("logger")
    key, fallback = fields.get("key", ""), fields.get("fallback", "")
    if found is None or found[1].handler is None or not logger or not key or not fallback:
        return None
    module, handler = found[0], found[1].handler
    if not isinstance(handler.body, cst.IndentedBlock):
        return None
    where = fields.get("function", "")
    text = f"{where + ': ' if where else ''}no {key} in the draft config; the setter falls back to %s"
    call = cst.parse_statement(f"{logger}.warning({_quoted(text)}, {json.dumps(fallback)})\n")
    body = handler.body.with_changes(body=[call, *handler.body.body])
    return _replace_statement(module, handler.body, body)


def _same(code: str, value: str) -> bool:
    """The same expression, up to layout (line breaks, a trailing comma)."""
    def flat(text: str) -> str:
        return re.sub(r",\s*([\])}])", r"\1", re.sub(r"\s+", " ", text)).replace("[ ", "[").replace(" ]", "]")
    return flat(code) == flat(value)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', "'").replace("%s", "\0").replace("%", "%%").replace("\0", "%s") + '"'


def _ids_source(value: cst.BaseExpression) -> tuple[cst.BaseExpression, str, int] | None:
    """(the ids expression, the element name, the shift) of ``list(ids)``, ``ids`` or ``[v (+ k) for v in ids]``."""
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("list", "tuple") \
            and len(value.args) == 1 and not value.args[0].keyword and not value.args[0].star:
        return value.args[0].value, "val", 0
    if isinstance(value, cst.Name):
        return value, "val", 0
    if isinstance(value, cst.ListComp) and isinstance(value.for_in.target, cst.Name) and value.for_in.inner_for_in is None \
            and not value.for_in.ifs:
        element, name = value.elt, value.for_in.target.value
        if isinstance(element, cst.Name) and element.value == name:
            return value.for_in.iter, name, 0
        if isinstance(element, cst.BinaryOperation) and isinstance(element.operator, cst.Add) \
                and isinstance(element.left, cst.Name) and element.left.value == name \
                and isinstance(element.right, cst.Integer) and element.right.value == "1":
            return value.for_in.iter, name, 1
    return None


def shift_ids(source: str, line: int, fields: Fields) -> str | None:
    """``= list(layer_ids)`` -> ``= [val + 1 for val in layer_ids]`` where the loop tests an id before
    the layer runs; the reverse where it tests after."""
    how = fields.get("how", "")
    wanted = 1 if how.startswith("before") else 0 if how.startswith("after") else None
    found = _locate(source, line)
    if wanted is None or found is None:
        return None
    module, statement, _ = found
    body = statement.body[0]
    if len(statement.body) != 1 or not isinstance(body, cst.Assign):
        return None
    parts = _ids_source(body.value)
    if parts is None or parts[2] == wanted:
        return None
    ids, name, _ = parts
    code = module.code_for_node(ids)
    new = f"[{name} + 1 for {name} in {code}]" if wanted else f"list({code})"
    return _replace_statement(module, body.value, cst.parse_expression(new))


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.read: set[str] = set()
        self.bound: set[str] = set()
        self.exits = False

    def visit_Name(self, node: cst.Name) -> None:
        self.read.add(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.bound.update(n.value for n in _walk(node.target) if isinstance(n, cst.Name))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bound.update(n.value for n in _walk(node.target) if isinstance(n, cst.Name))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(n.value for n in _walk(node.target) if isinstance(n, cst.Name))

    def visit_For(self, node: cst.For) -> None:
        self.bound.update(n.value for n in _walk(node.target) if isinstance(n, cst.Name))

    def visit_AsName(self, node: cst.AsName) -> None:
        self.bound.update(n.value for n in _walk(node.name) if isinstance(n, cst.Name))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bound.update(n.value for n in _walk(node.target) if isinstance(n, cst.Name))

    def visit_Return(self, node: cst.Return) -> None:
        self.exits = True

    def visit_Raise(self, node: cst.Raise) -> None:
        self.exits = True

    def visit_Break(self, node: cst.Break) -> None:
        self.exits = True

    def visit_Continue(self, node: cst.Continue) -> None:
        self.exits = True


def _names(node: cst.CSTNode) -> _Names:
    names = _Names()
    node.visit(names)
    return names


def move_before_capture(source: str, line: int, fields: Fields) -> str | None:
    """Move the setter call up its block to just after the last statement that binds a name it reads
    (never above a statement that may leave the block, nor above a docstring)."""
    found = _locate(source, line)
    if found is None:
        return None
    module, statement, block = found
    body = list(block.body)
    index = next((i for i, s in enumerate(body) if s is statement), None)
    if index is None or index == 0:
        return None
    reads = _names(statement).read - {"self"}
    to = index
    while to > 0:
        before = body[to - 1]
        names = _names(before)
        if names.bound & reads or names.exits or (to - 1 == 0 and _is_docstring(before)):
            break
        to -= 1
    if to == index:
        return None
    moved = statement.with_changes(leading_lines=cast(Any, body[to]).leading_lines)
    displaced = cast(Any, body[to]).with_changes(leading_lines=statement.leading_lines)  # simple or compound
    reordered = body[:to] + [moved, displaced] + body[to + 1:index] + body[index + 1:]
    updated = module.deep_replace(block, block.with_changes(body=reordered))
    assert isinstance(updated, cst.Module)
    return updated.code


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Expr) \
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])  # type: ignore[attr-defined]
    return first, node.end_lineno or node.lineno  # type: ignore[attr-defined]


def _window(tree: ast.Module, lines: list[str], line: int) -> tuple[int, int, str] | None:
    """(first line, last line, indent) of the innermost def holding ``line`` whose lines all carry its
    indent (a string literal further left: the top-level statement instead), else the top-level one."""
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _span(n)[0] <= line <= _span(n)[1]]
    for node in sorted(defs, key=lambda n: _span(n)[1] - _span(n)[0]):
        start, end = _span(node)
        indent = lines[start - 1][:len(lines[start - 1]) - len(lines[start - 1].lstrip())]
        if all(text.startswith(indent) or not text.strip() for text in lines[start - 1:end]):
            return start, end, indent
    top = next((_span(n) for n in tree.body if _span(n)[0] <= line <= _span(n)[1]), None)
    return (*top, "") if top is not None else None


def _windowed(codemod: Callable[[str, int, Fields], str | None]) -> Callable[[str, int, Fields], str | None]:
    """The codemod run on the innermost def that holds the line (dedented), not the whole file:
    libcst's positions over a model file cost more than its parse. The lines the codemod did not
    change are put back byte for byte; the ones it wrote get the def's indent."""

    def run(source: str, line: int, fields: Fields) -> str | None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            return None
        lines = source.splitlines(keepends=True)
        window = _window(tree, lines, line)
        if window is None:
            return None
        start, end, indent = window
        original = lines[start - 1:end]
        dedented = [text[len(indent):] if text.startswith(indent) else text.lstrip(" \t") for text in original]
        fixed = codemod("".join(dedented), line - start + 1, {**fields, "logger": _module_logger(tree) or ""})
        if fixed is None:
            return None
        after = fixed.splitlines(keepends=True)
        spliced: list[str] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, dedented, after, autojunk=False).get_opcodes():
            spliced.extend(original[i1:i2] if tag == "equal" else
                           (indent + text if text.strip() else text for text in after[j1:j2]))
        return "".join(lines[:start - 1] + spliced + lines[end:])

    return run


CODEMODS: Mapping[str, Callable[[str, int, Fields], str | None]] = {
    "rename_write": _windowed(rename_write), "rename_call": _windowed(rename_call),
    "log_fallback": _windowed(log_fallback), "shift_ids": _windowed(shift_ids),
    "move_before_capture": _windowed(move_before_capture),
}
