"""Index stage: the summary of one method or function, read with the stdlib ``ast`` --
the one summariser of the analysis (``model.summary.Function``: calls, self-attribute
writes and reads, fallback branches, hasattr guards, returned values), for the one body a
later stage asks for. No concrete syntax is needed here: source excerpts come from the
file text itself (``ast.get_source_segment``), and columns are characters of the file's
line. (libcst stays where concrete syntax earns its place: the interpreter's positions
and, for edits, fixes that keep every other byte.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tracer.bind.syntax import hasattr_test, super_call
from tracer.model.errors import InputError
from tracer.model.summary import Call, Fallback, Function, Param, Read, Write

MAX_SRC = 80  # characters of source kept for a value or condition


def dotted(node: ast.AST | None) -> str:
    """``a.b.c`` for Name/Attribute chains, ``super()`` for super calls, else ''."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    if super_call(node) is not None:
        return "super()"
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return str(node.value)  # names in libcst's tree: None, True, False
    return ""


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


class _Collector:
    """One function's facts; nested functions and classes count as its body."""

    def __init__(self, text: str, lines: list[str], line_offset: int, col_shift: int):
        self.text = text
        self.lines = lines
        self.line_offset = line_offset
        self.col_shift = col_shift
        self.params: set[str] = set()
        self.calls: list[Call] = []
        self.writes: list[Write] = []
        self.reads: dict[str, Read] = {}
        self.fallbacks: list[Fallback] = []
        self.locals: list[tuple[str, str]] = []
        self.returns: list[str] = []
        self.none_branches: list[tuple[str, int, int, int, int]] = []
        self.guards: list[tuple[str, str, tuple[str, ...]]] = []
        self.nested = 0

    # -- positions and source ------------------------------------------------------
    def pos(self, node: ast.AST) -> tuple[int, int]:
        line = int(getattr(node, "lineno", 1))
        raw = int(getattr(node, "col_offset", 0))
        row = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = len(row.encode("utf-8")[:raw].decode("utf-8", errors="replace")) if not row.isascii() else raw
        return line + self.line_offset, col + self.col_shift

    def src(self, node: ast.AST) -> str:
        segment = self.segment(node) or ast.unparse(node)
        text = " ".join(segment.split())
        text = text.replace("( ", "(").replace("[ ", "[").replace(", ]", "]").replace(", )", ")")
        text = text.replace(" ]", "]").replace(" )", ")")
        return text if len(text) <= MAX_SRC else text[: MAX_SRC - 3] + "..."

    def segment(self, node: ast.AST) -> str:
        """The node's source text (``ast.get_source_segment`` re-splits the whole text on
        every call: that was a third of a cold scan)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if first is None or last is None or start is None or end is None or not 0 < first <= last <= len(self.lines):
            return ""
        if first == last:
            return self.lines[first - 1].encode()[start:end].decode(errors="replace")
        head = self.lines[first - 1].encode()[start:].decode(errors="replace")
        tail = self.lines[last - 1].encode()[:end].decode(errors="replace")
        return "\n".join([head, *self.lines[first:last - 1], tail])

    def span(self, body: list[ast.stmt]) -> tuple[int, int]:
        if not body:
            return 0, 0
        return body[0].lineno + self.line_offset, int(body[-1].end_lineno or body[-1].lineno) + self.line_offset

    # -- walking -------------------------------------------------------------------
    def visit(self, node: ast.AST) -> None:
        handler = getattr(self, f"visit_{type(node).__name__}", None)
        if handler is not None:
            handler(node)
        else:
            self.children(node)

    def children(self, node: ast.AST) -> None:
        # in source order, as libcst visits (ast's fields put `a if t else b`'s test first);
        # most nodes' fields already are (sorting them was a tenth of a cold scan)
        children = list(ast.iter_child_nodes(node))
        if len(children) > 1 and type(node) not in _FIELDS_IN_SOURCE_ORDER:
            children.sort(key=_where)
        for child in children:
            self.visit(child)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.nested += 1  # a nested def: its body is the enclosing function's
        self.children(node)
        self.nested -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not self.nested:
            calls = _value_calls(node.value)
            if calls:
                self.returns.extend(calls)
            elif dotted(node.value):
                self.returns.append("=" + dotted(node.value))
        self.children(node)

    def visit_If(self, node: ast.If) -> None:
        guard = _hasattr_guard(node.test)
        self.guards.append((guard[0], guard[1], tuple(sorted(_self_targets(node.orelse)))) if guard else ("", "", ()))
        tested, negated = _none_test(node.test, self.params)
        if tested:
            branch, other = (node.body, node.orelse) if not negated else (node.orelse, node.body)
            self._fallbacks(tested, branch)
            fb, ex = self.span(branch), self.span(other)
            self.none_branches.append((tested, fb[0], fb[1], ex[0], ex[1]))
        self.children(node)
        self.guards.pop()

    def _fallbacks(self, param: str, branch: list[ast.stmt]) -> None:
        branch_calls = tuple(sorted({name for c in _calls_in(branch) if (name := dotted(c.func))}))
        for index, stmt in enumerate(branch):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                if param in _names(stmt.value):
                    continue  # derived from the parameter: not a fallback
                if not isinstance(stmt.value, (ast.List, ast.Tuple, ast.ListComp, ast.Call)):
                    continue
                bound = stmt.targets[0]
                if isinstance(bound, ast.Name) and isinstance(stmt.value, ast.Call) \
                        and any(bound.id in _names(later) for later in branch[index + 1:]):
                    continue  # an intermediate (num_layers = len(self.layers)) the fallback is built from
                line, col = self.pos(stmt)
                target = dotted(stmt.targets[0]) or self.src(stmt.targets[0])
                self.fallbacks.append(Fallback(param, line, col, target, self.src(stmt.value), branch_calls))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value  # a default list handed straight on: self.model.set_x([2, n // 2, n - 3])
                literal = [a for a in call.args if isinstance(a, (ast.List, ast.Tuple))]
                if literal and param not in _names(call) and dotted(call.func):
                    line, col = self.pos(stmt)
                    self.fallbacks.append(Fallback(param, line, col, dotted(call.func) + "()", self.src(literal[0]),
                                                   branch_calls))

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node.value, node)
        self.children(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node.value, node)
        self.children(node)

    def _target(self, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        targets = list(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else [target]
        for tgt in targets:
            name = dotted(tgt)
            if name.startswith("self."):
                line, col = self.pos(stmt)
                self.writes.append(Write(target=name, line=line, col=col, value_calls=_value_calls(value),
                                         value_src=self.src(value), literal_true=_true(value)))
            elif isinstance(tgt, ast.Attribute) and tgt.attr.startswith("_"):
                # a private flag set on another object (self.layers[i]._is_layer_to_capture = True)
                line, col = self.pos(stmt)
                self.writes.append(Write(target=f"*.{tgt.attr}", line=line, col=col, value_src=self.src(value),
                                         literal_true=_true(value)))
            elif isinstance(tgt, ast.Name) and len(targets) == 1:
                calls = _value_calls(value)
                if calls:
                    self.locals.append((tgt.id, calls[0]))
                elif dotted(value):
                    self.locals.append((tgt.id, "=" + dotted(value)))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.ctx, ast.Store):  # `del self.x` reads it too, as libcst's summary has it
            name = dotted(node)
            if name.startswith("self.") and name not in self.reads:
                line, col = self.pos(node)
                self.reads[name] = Read(name, line, col)
            elif not name.startswith("self.") and node.attr.startswith("_") and node.attr != "__class__":
                key = f"*.{node.attr}"  # a private flag read on another object (layer._is_layer_to_capture)
                if key not in self.reads:
                    line, col = self.pos(node)
                    self.reads[key] = Read(key, line, col)
        self.children(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        line, col = self.pos(node)
        args: list[str] = []
        kwargs: list[tuple[str, str]] = []
        star = False
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                star = True
                continue
            args.append(dotted(arg) or self.src(arg))
        for keyword in node.keywords:
            if keyword.arg is None:
                star = True
                continue
            kwargs.append((keyword.arg, dotted(keyword.value) or self.src(keyword.value)))
        guard, else_writes = "", tuple[str, ...]()
        if name:
            receiver, _, method = name.rpartition(".")
            for g_receiver, g_name, g_else in reversed(self.guards):
                if g_receiver and g_receiver == receiver and g_name == method:
                    guard, else_writes = f"hasattr({receiver}, {method!r})", g_else
                    break
        self.calls.append(Call(name, line, col, len(args) + len(kwargs), tuple(args), tuple(kwargs), star, guard,
                               else_writes))
        # getattr(self, "x") reads self.x; on anything else "*.x" (per-object markers)
        if (looked := hasattr_test(node)) or name == "getattr" and len(node.args) >= 2:
            attr = looked.name if looked else _string(node.args[1])
            owner = "self" if dotted(node.args[0]) == "self" else "*"
            if attr and f"{owner}.{attr}" not in self.reads:
                self.reads[f"{owner}.{attr}"] = Read(f"{owner}.{attr}", line, col)
        if name == "setattr" and len(node.args) >= 3:
            attr = _string(node.args[1])
            if attr:
                owner = "self" if dotted(node.args[0]) == "self" else "*"
                self.writes.append(Write(target=f"{owner}.{attr}", line=line, col=col, value_src=self.src(node.args[2]),
                                         literal_true=_true(node.args[2])))
        self.children(node)


# Node types whose children, in field order, are in source order (a child without a position,
# an operator or a context, may stand anywhere: visiting it records nothing). Not here: IfExp
# (test first), Dict (keys, then values), Call (keywords may precede a *args), arguments
# (defaults after every argument), function and class defs (decorators after the body).
_FIELDS_IN_SOURCE_ORDER = frozenset({
    ast.Module, ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Delete, ast.Raise,
    ast.Assert, ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.withitem, ast.Try,
    ast.ExceptHandler, ast.Attribute, ast.Subscript, ast.Slice, ast.BinOp, ast.BoolOp, ast.UnaryOp,
    ast.Compare, ast.keyword, ast.Starred, ast.Tuple, ast.List, ast.Set, ast.Await, ast.Yield,
    ast.YieldFrom, ast.NamedExpr, ast.JoinedStr, ast.FormattedValue, ast.ListComp, ast.SetComp,
    ast.GeneratorExp, ast.DictComp, ast.comprehension, ast.Lambda,
})


def _where(node: ast.AST) -> tuple[int, int]:
    """Where a node starts; for one without a position (a comprehension, arguments), its first child."""
    while not hasattr(node, "lineno"):
        children = list(ast.iter_child_nodes(node))
        if not children:
            return (0, 0)
        node = min(children, key=_where)
    return (int(getattr(node, "lineno", 0)), int(getattr(node, "col_offset", 0)))


def _calls_in(body: list[ast.stmt]) -> Iterable[ast.Call]:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                yield node


def _names(node: ast.AST) -> set[str]:
    """Every identifier in ``node``, attribute names included (``self.x`` names x)."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.keyword) and n.arg:
            found.add(n.arg)  # f(name=...) names `name` (a Name node in libcst's tree)
    return found


def _self_targets(stmts: list[ast.stmt]) -> set[str]:
    found: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            found |= _self_targets(stmt.body) | _self_targets(stmt.orelse)
        elif isinstance(stmt, ast.Assign):
            found |= {dotted(t) for t in stmt.targets if dotted(t).startswith("self.")}
    return found


def _value_calls(value: ast.expr) -> tuple[str, ...]:
    """Dotted callees a value may come from, keeping if/else alternatives."""
    if isinstance(value, ast.IfExp):
        return _value_calls(value.body) + _value_calls(value.orelse)
    if isinstance(value, ast.Call):
        name = dotted(value.func)
        if name:
            return (name,)
        if isinstance(value.func, ast.Subscript):
            return ("<subscript>",)
        if isinstance(value.func, ast.Call):
            return ("<call>",)
    if isinstance(value, ast.BoolOp):
        return tuple(call for v in value.values for call in _value_calls(v))
    return ()


def _hasattr_guard(test: ast.expr) -> tuple[str, str] | None:
    if isinstance(test, ast.BoolOp):
        return next((g for v in test.values if (g := _hasattr_guard(v))), None)
    if (tested := hasattr_test(test)) is not None:
        name, receiver = tested.name, dotted(tested.receiver)
        if name and receiver:
            return receiver, name
    return None


def _none_test(test: ast.expr, params: set[str]) -> tuple[str, bool]:
    """(param, negated) for ``param is None`` / ``not param`` (negated: ``param is not
    None`` / ``param``, so the else branch is the fallback)."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1:
        other = test.comparators[0]
        if isinstance(other, ast.Constant) and other.value is None and test.left.id in params:
            if isinstance(test.ops[0], (ast.Is, ast.Eq)):
                return test.left.id, False
            if isinstance(test.ops[0], (ast.IsNot, ast.NotEq)):
                return test.left.id, True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name) \
            and test.operand.id in params:
        return test.operand.id, False
    if isinstance(test, ast.Name) and test.id in params:
        return test.id, True
    return "", False


def ast_text(rows: list[str], offset: int, start: int) -> str:
    return ("if True:\n" if offset != start - 1 else "") + "\n".join(rows) + "\n"


def parse_body(rows: list[str], start: int) -> tuple[ast.Module, int]:
    """The ast of one def (its lines ``rows``, from file line ``start``), parsed where it
    stands: an indented def goes under ``if True:`` so its lines keep their columns
    (a docstring line at column 0 would defeat a dedent). Returns the module whose
    body holds the def, and the offset that turns its line numbers into file lines."""
    first = next((row for row in rows if row.strip()), "")
    indented = first[:1].isspace()
    offset = start - 2 if indented else start - 1
    snippet = ast_text(rows, offset, start)
    try:
        tree = ast.parse(snippet)
    except SyntaxError as exc:
        raise InputError(f"syntax error: {exc.msg}", offset + (exc.lineno or 1)) from None
    except (RecursionError, MemoryError):
        raise InputError("nesting too deep to parse", start) from None
    except ValueError as exc:
        raise InputError(f"cannot parse: {exc}", start) from None
    if indented and tree.body and isinstance(tree.body[0], ast.If):
        tree.body = tree.body[0].body
    return tree, offset


_split: list = [None, []]  # the last text split into lines: a module's methods come one after another


def _lines(text: str) -> list[str]:
    if _split[0] is not text:
        _split[0], _split[1] = text, text.split("\n")
    return _split[1]


def summarize_function(text: str, start: int, end: int, module: str, class_qualname: str = "",
                       is_package: bool = False, parsed: tuple[ast.Module, int] | None = None) -> Function:
    """Summarise one method or function: lines ``start..end`` (1-based, decorators
    included) of ``text``. Positions are those of the whole file. ``parsed``: the
    ``parse_body`` of those lines, where the caller has it already."""
    rows = _lines(text)[start - 1:end]
    tree, offset = parsed if parsed is not None else parse_body(rows, start)
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        raise InputError("no function found at the given lines", start)
    snippet = ast_text(rows, offset, start)
    collector = _Collector(snippet, snippet.split("\n"), offset, 0)
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    params = [Param(a.arg, dotted(d) if d is not None else "", dotted(a.annotation) if a.annotation else "")
              for a, d in zip(positional, defaults)]
    params += [Param(a.arg, dotted(d) if d is not None else "", dotted(a.annotation) if a.annotation else "")
               for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)]
    collector.params = {p.name for p in params}
    try:  # decorators, then parameters (defaults), then the body: libcst's order
        for child in [*node.decorator_list, node.args, *node.body]:
            collector.visit(child)
    except RecursionError:
        raise InputError("nesting too deep to analyse", start) from None
    line, col = collector.pos(node)
    qualname = f"{class_qualname}.{node.name}" if class_qualname else node.name
    return Function(
        name=node.name, qualname=qualname, line=line, col=col,
        end_line=int(node.end_lineno or node.lineno) + offset, params=tuple(params),
        calls=tuple(collector.calls), writes=tuple(collector.writes), reads=tuple(collector.reads.values()),
        fallbacks=tuple(collector.fallbacks), local_types=tuple(collector.locals),
        returns=tuple(dict.fromkeys(collector.returns)), none_branches=tuple(collector.none_branches),
    )
