"""Index stage: the libcst summary of a whole module (plain data, model.summary).

``summarize`` summarises every class and function of a module at once (``graph
--all`` and the fuzz tests). The protocol scan summarises one method body at a
time, when a later stage needs it, with the stdlib ``ast`` (methods.py, the same
plain data); module outlines come from the stdlib ``ast`` too (outline.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from tracer.index.source import resolve_relative
from tracer.model.errors import InputError
from tracer.model.summary import (
    Call,
    ClassDef,
    Fallback,
    Function,
    Import,
    ModuleSummary,
    Param,
    Read,
    Write,
)

MAX_SRC = 80  # characters of source kept for a value or condition


def dotted(node: cst.CSTNode | None) -> str:
    """``a.b.c`` for Name/Attribute chains, ``super().x`` for super calls, else ''."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super":
        return "super()"
    return ""


def _string_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - odd prefixes
            return None
        return value if isinstance(value, str) else None
    return None


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: str, is_package: bool, code_for_node, line_offset: int = 0, col_shift: int = 0):
        super().__init__()
        self.line_offset = line_offset
        self.col_shift = col_shift
        self.module = module
        self.is_package = is_package
        self.code_for_node = code_for_node
        self.imports: list[Import] = []
        self.star_imports: list[str] = []
        self.classes: list[ClassDef] = []
        self.functions: list[Function] = []
        self.module_calls: list[Call] = []
        self.assignments: list[tuple[str, tuple[str, ...], int]] = []
        # scope stacks
        self._class_stack: list[dict] = []
        self._func_stack: list[dict] = []
        self._guards: list[tuple[str, str, tuple[str, ...]]] = []  # (receiver, name, else-writes)
        self._skip_reads: set[int] = set()

    # -- helpers ---------------------------------------------------------
    def _pos(self, node: cst.CSTNode) -> tuple[int, int]:
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line + self.line_offset, pos.start.column + self.col_shift

    def _src(self, node: cst.CSTNode) -> str:
        text = " ".join(self.code_for_node(node).split())
        # a list written over several lines reads "[ 2, n, ]" once joined: tidy it
        text = text.replace("( ", "(").replace("[ ", "[").replace(", ]", "]").replace(", )", ")")
        text = text.replace(" ]", "]").replace(" )", ")")
        return text if len(text) <= MAX_SRC else text[: MAX_SRC - 3] + "..."

    def _current(self) -> dict | None:
        return self._func_stack[-1] if self._func_stack else None

    # -- imports -----------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        line, _ = self._pos(node)
        for alias in node.names:
            name = dotted(alias.name)
            if alias.asname is not None:
                self.imports.append(Import(dotted(alias.asname.name), name, line))
            else:
                # `import a.b.c` binds `a`; record the full path too so `a.b.c.X` resolves.
                self.imports.append(Import(name.split(".")[0], name.split(".")[0], line))
                if "." in name:
                    self.imports.append(Import(name, name, line))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        line, _ = self._pos(node)
        level = len(node.relative)
        name = dotted(node.module) if node.module is not None else ""
        base = resolve_relative(self.module, self.is_package, level, name)
        if isinstance(node.names, cst.ImportStar):
            self.star_imports.append(base)
            return
        for alias in node.names:
            imported = dotted(alias.name)
            local = dotted(alias.asname.name) if alias.asname is not None else imported
            self.imports.append(Import(local, f"{base}.{imported}" if base else imported, line))

    # -- classes -------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        line, col = self._pos(node)
        prefix = ".".join(c["name"] for c in self._class_stack)
        qual = f"{prefix}.{node.name.value}" if prefix else node.name.value
        bases = tuple(dotted(arg.value) or self._src(arg.value) for arg in node.bases if arg.keyword is None)
        annotations, class_attrs = [], []
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        annotations.append((small.target.value, dotted(small.annotation.annotation)))
                    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                        target = small.targets[0].target
                        if isinstance(target, cst.Name) and dotted(small.value):
                            class_attrs.append((target.value, dotted(small.value)))
        self._class_stack.append({
            "name": node.name.value, "qualname": qual, "line": line, "col": col, "bases": bases,
            "methods": [], "annotations": tuple(annotations), "class_attrs": tuple(class_attrs),
        })

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        data = self._class_stack.pop()
        if self._func_stack:
            return  # classes defined inside functions are not addressable
        self.classes.append(ClassDef(
            name=data["name"], qualname=data["qualname"], line=data["line"], col=data["col"],
            bases=data["bases"], methods=tuple(data["methods"]), annotations=data["annotations"],
            class_attrs=data["class_attrs"],
        ))

    # -- functions -------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._func_stack:
            # Nested function: its body is attributed to the enclosing function.
            self._func_stack[-1]["nested"] += 1
            return
        line, col = self._pos(node)
        end = self.get_metadata(PositionProvider, node).end.line + self.line_offset
        params = []
        for p in list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params):
            default = dotted(p.default) if p.default is not None else ""
            annotation = dotted(p.annotation.annotation) if p.annotation is not None else ""
            params.append(Param(p.name.value, default, annotation))
        cls = self._class_stack[-1] if self._class_stack else None
        qual = f"{cls['qualname']}.{node.name.value}" if cls else node.name.value
        self._func_stack.append({
            "name": node.name.value, "qualname": qual, "line": line, "col": col, "end": end,
            "params": tuple(params), "calls": [], "writes": [], "reads": {}, "fallbacks": [],
            "locals": [], "returns": [], "none_branches": [], "nested": 0,
        })

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        data = self._func_stack[-1]
        if data["nested"]:
            data["nested"] -= 1
            return
        self._func_stack.pop()
        func = Function(
            name=data["name"], qualname=data["qualname"], line=data["line"], col=data["col"],
            end_line=data["end"], params=data["params"], calls=tuple(data["calls"]),
            writes=tuple(data["writes"]), reads=tuple(data["reads"].values()),
            fallbacks=tuple(data["fallbacks"]), local_types=tuple(data["locals"]),
            returns=tuple(dict.fromkeys(data["returns"])),
            none_branches=tuple(data["none_branches"]),
        )
        if self._class_stack:
            self._class_stack[-1]["methods"].append(func)
        else:
            self.functions.append(func)

    def visit_Return(self, node: cst.Return) -> None:
        func = self._current()
        if func is None or node.value is None or func["nested"]:
            return
        calls = _value_calls(node.value)
        if calls:
            func["returns"].extend(calls)
        elif dotted(node.value):
            func["returns"].append("=" + dotted(node.value))

    # -- if: guards and fallbacks ------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        func = self._current()
        if func is None:
            return
        guard = _hasattr_guard(node.test)
        if guard:
            else_writes = tuple(sorted(_self_targets(_else_statements(node))))
            self._guards.append((guard[0], guard[1], else_writes))
        else:
            self._guards.append(("", "", ()))
        params = {p.name for p in func["params"]}
        tested, negated = _none_test(node.test, params)
        if tested:
            other_block = node.orelse.body if isinstance(node.orelse, cst.Else) else node.orelse
            branch = node.body if not negated else other_block
            other = other_block if not negated else node.body
            if isinstance(branch, cst.BaseSuite):
                self._record_fallbacks(func, tested, branch)
            fb = self._span(branch)
            ex = self._span(other)
            func["none_branches"].append((tested, fb[0], fb[1], ex[0], ex[1]))

    def _span(self, node) -> tuple[int, int]:
        if node is None:
            return 0, 0
        pos = self.get_metadata(PositionProvider, node)
        return pos.start.line + self.line_offset, pos.end.line + self.line_offset

    def leave_If(self, node: cst.If) -> None:
        if self._current() is not None:
            self._guards.pop()

    def _record_fallbacks(self, func: dict, param: str, branch: cst.BaseSuite) -> None:
        stmts = branch.body if isinstance(branch, cst.IndentedBlock) else ()
        # what the branch calls: whether one of them logs is the pack's to say (fallback.logging_calls)
        branch_calls = tuple(sorted({name for c in _walk_calls(branch) if (name := dotted(c.func))}))
        for stmt in stmts:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    if param in _names(small.value):
                        continue  # derived from the parameter: not a fallback
                    if not isinstance(small.value, (cst.List, cst.Tuple, cst.ListComp, cst.Call)):
                        continue
                    line, col = self._pos(small)
                    target = dotted(small.targets[0].target) or self._src(small.targets[0].target)
                    func["fallbacks"].append(Fallback(param, line, col, target, self._src(small.value), branch_calls))
                elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                    # A default list handed straight on: self.model.set_x([2, n // 2, n - 3])
                    call = small.value
                    literal = [a.value for a in call.args if isinstance(a.value, (cst.List, cst.Tuple))]
                    if literal and param not in _names(call) and dotted(call.func):
                        line, col = self._pos(small)
                        func["fallbacks"].append(Fallback(param, line, col, dotted(call.func) + "()",
                                                          self._src(literal[0]), branch_calls))

    # -- assignments ---------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        func = self._current()
        for t in node.targets:
            self._skip_reads.add(id(t.target))
        if func is None:
            if not self._class_stack and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                values = _dotted_values(node.value)
                if values:
                    line, _ = self._pos(node)
                    self.assignments.append((node.targets[0].target.value, values, line))
            return
        for t in node.targets:
            self._record_target(func, t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        func = self._current()
        self._skip_reads.add(id(node.target))
        if func is not None and node.value is not None:
            self._record_target(func, node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._skip_reads.add(id(node.target))

    def _record_target(self, func: dict, target: cst.BaseExpression, value: cst.BaseExpression, stmt) -> None:
        targets = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
        for tgt in targets:
            name = dotted(tgt)
            if name.startswith("self."):
                line, col = self._pos(stmt)
                func["writes"].append(Write(
                    target=name, line=line, col=col, value_calls=_value_calls(value),
                    value_src=self._src(value),
                    literal_true=isinstance(value, cst.Name) and value.value == "True",
                ))
            elif isinstance(tgt, cst.Attribute) and tgt.attr.value.startswith("_"):
                # a private flag set on another object (self.layers[i]._is_layer_to_capture = True)
                line, col = self._pos(stmt)
                func["writes"].append(Write(
                    target=f"*.{tgt.attr.value}", line=line, col=col, value_src=self._src(value),
                    literal_true=isinstance(value, cst.Name) and value.value == "True",
                ))
            elif isinstance(tgt, cst.Name) and len(targets) == 1:
                calls = _value_calls(value)
                if calls:
                    func["locals"].append((tgt.value, calls[0]))
                elif dotted(value):
                    func["locals"].append((tgt.value, "=" + dotted(value)))

    # -- reads and calls -------------------------------------------------------------
    def visit_Attribute(self, node: cst.Attribute) -> None:
        func = self._current()
        if func is None or id(node) in self._skip_reads:
            return
        name = dotted(node)
        if name.startswith("self.") and name not in func["reads"]:
            line, col = self._pos(node)
            func["reads"][name] = Read(name, line, col)
        elif not name.startswith("self.") and node.attr.value.startswith("_") and node.attr.value != "__class__":
            # a private flag read on another object (layer._is_layer_to_capture)
            key = f"*.{node.attr.value}"
            if key not in func["reads"]:
                line, col = self._pos(node)
                func["reads"][key] = Read(key, line, col)

    def visit_Call(self, node: cst.Call) -> None:
        func = self._current()
        name = dotted(node.func)
        line, col = self._pos(node)
        args, kwargs, star = [], [], False
        for arg in node.args:
            if arg.star:
                star = True
                continue
            value = dotted(arg.value) or self._src(arg.value)
            if arg.keyword is not None:
                kwargs.append((arg.keyword.value, value))
            else:
                args.append(value)
        guard, else_writes = "", tuple[str, ...]()
        if func is not None and name:
            receiver, _, method = name.rpartition(".")
            for g_receiver, g_name, g_else in reversed(self._guards):
                if g_receiver and g_receiver == receiver and g_name == method:
                    guard, else_writes = f"hasattr({receiver}, {method!r})", g_else
                    break
        call = Call(name, line, col, len(args) + len(kwargs), tuple(args), tuple(kwargs), star, guard, else_writes)
        if func is None:
            if not self._class_stack:
                self.module_calls.append(call)
            return
        func["calls"].append(call)
        # getattr(self, "x") reads self.x; getattr(obj, "x") on anything else
        # reads "*.x" (per-object markers such as a layer's _is_layer_to_capture).
        if name in ("getattr", "hasattr") and len(node.args) >= 2:
            attr = _string_value(node.args[1].value)
            owner = "self" if dotted(node.args[0].value) == "self" else "*"
            if attr and f"{owner}.{attr}" not in func["reads"]:
                func["reads"][f"{owner}.{attr}"] = Read(f"{owner}.{attr}", line, col)
        if name == "setattr" and len(node.args) >= 3:
            attr = _string_value(node.args[1].value)
            if attr:
                owner = "self" if dotted(node.args[0].value) == "self" else "*"
                value_node = node.args[2].value
                func["writes"].append(Write(target=f"{owner}.{attr}", line=line, col=col,
                                            value_src=self._src(value_node),
                                            literal_true=isinstance(value_node, cst.Name)
                                            and value_node.value == "True"))


def _walk_calls(node: cst.CSTNode) -> Iterable[cst.Call]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(current.children)


def _names(node: cst.CSTNode) -> set[str]:
    found, stack = set(), [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        stack.extend(current.children)
    return found


def _else_statements(node: cst.If) -> tuple:
    if isinstance(node.orelse, cst.Else) and isinstance(node.orelse.body, cst.IndentedBlock):
        return tuple(node.orelse.body.body)
    if isinstance(node.orelse, cst.If):
        return (node.orelse,)
    return ()


def _self_targets(stmts) -> set[str]:
    found = set()
    for stmt in stmts:
        if isinstance(stmt, cst.If):
            found |= _self_targets(stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ())
            found |= _self_targets(_else_statements(stmt))
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Assign,)):
                    for t in small.targets:
                        name = dotted(t.target)
                        if name.startswith("self."):
                            found.add(name)
    return found


def _value_calls(value: cst.BaseExpression) -> tuple[str, ...]:
    """Dotted callees a value may come from, keeping if/else alternatives."""
    if isinstance(value, cst.IfExp):
        return _value_calls(value.body) + _value_calls(value.orelse)
    if isinstance(value, cst.Call):
        name = dotted(value.func)
        if name:
            return (name,)
        if isinstance(value.func, cst.Subscript):
            return ("<subscript>",)
        if isinstance(value.func, cst.Call):
            return ("<call>",)
    if isinstance(value, cst.BooleanOperation):
        return _value_calls(value.left) + _value_calls(value.right)
    return ()


def _dotted_values(value: cst.BaseExpression) -> tuple[str, ...]:
    if dotted(value):
        return (dotted(value),)
    if isinstance(value, (cst.List, cst.Tuple)):
        names = tuple(dotted(e.value) for e in value.elements)
        if names and all(names):
            return names
    return ()


def _hasattr_guard(test: cst.BaseExpression) -> tuple[str, str] | None:
    if isinstance(test, cst.BooleanOperation):
        return _hasattr_guard(test.left) or _hasattr_guard(test.right)
    if isinstance(test, cst.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2:
        name = _string_value(test.args[1].value)
        receiver = dotted(test.args[0].value)
        if name and receiver:
            return receiver, name
    return None


def _none_test(test: cst.BaseExpression, params: set[str]) -> tuple[str, bool]:
    """(param, negated) when the test is ``param is None`` / ``not param`` (negated:
    ``param is not None`` / ``param``, so the else branch is the fallback)."""
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None" and test.left.value in params:
            if isinstance(comp.operator, (cst.Is, cst.Equal)):
                return test.left.value, False
            if isinstance(comp.operator, (cst.IsNot, cst.NotEqual)):
                return test.left.value, True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        if isinstance(test.expression, cst.Name) and test.expression.value in params:
            return test.expression.value, False
    if isinstance(test, cst.Name) and test.value in params:
        return test.value, True
    return "", False


# libcst's native parser recurses without a bound: ~3,000 nested brackets, `or`
# operands or lambdas crash the process (SIGSEGV), and a few hundred chained
# operators make its visitors take seconds to minutes before a RecursionError.
# Python's own parser is guarded, and real code nests at most ~25 levels
# (SGLang 0.5.23 models: 23), so a module deeper than this is refused up front.
MAX_NESTING = 100


def check_nesting(text: str, first_line: int = 1) -> None:
    """InputError when ``text`` nests deeper than libcst can safely take."""
    import ast

    try:
        tree = ast.parse(text)
    except (MemoryError, RecursionError):
        raise InputError("nesting too deep to parse (Python's own parser gives up)", first_line) from None
    except SyntaxError as exc:
        if "too many nested" in str(exc.msg) or _naive_nesting(text) > MAX_NESTING:
            raise InputError(f"syntax error: {exc.msg}", first_line - 1 + (exc.lineno or 1)) from None
        return  # newer syntax than this interpreter's, perhaps: libcst decides
    except ValueError:
        return  # e.g. NUL bytes: libcst decides
    depth, line = _ast_depth(tree)
    if depth > MAX_NESTING:
        raise InputError(f"nesting too deep to analyse safely ({depth} levels; limit {MAX_NESTING})",
                         first_line - 1 + line)


def _ast_depth(tree) -> tuple[int, int]:
    """Deepest nesting of ``tree`` as libcst will see it (``a or b or c`` nests
    there, a flat BoolOp here), and the line where it is; iterative."""
    import ast

    best, where = 0, 1
    stack = [(tree, 1, 1)]
    while stack:
        node, depth, line = stack.pop()
        line = getattr(node, "lineno", line)
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
        if depth > best:
            best, where = depth, line
            if best > MAX_NESTING:
                break
        stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
    return best, where


def _naive_nesting(text: str) -> int:
    """Upper-bound guess (strings and comments counted too) for text Python cannot parse,
    over logical lines: a line continued by a backslash or inside brackets is one line, so a
    20,000-operand chain spread over short physical lines is seen whole (libcst crashed on it).
    Each operator or operator keyword of a logical line counts as a level of nesting, up to
    MAX_OPERATORS per line before the guard refuses (libcst's native parser crashes near 3,000)."""
    depth = deepest = 0
    operators = 0
    for line in text.split("\n"):
        opened = sum(line.count(c) for c in "([{")
        depth = max(0, depth) + opened
        deepest = max(deepest, depth, len(line) // 100)
        depth -= sum(line.count(c) for c in ")]}")
        operators += len(_OPERATOR.findall(line))
        if operators > MAX_OPERATORS:
            return max(deepest, MAX_NESTING + 1)
        if depth <= 0 and not line.rstrip().endswith("\\"):
            operators = 0  # the logical line ends here
    return deepest


MAX_OPERATORS = 10 * MAX_NESTING
_OPERATOR = re.compile(r"[-+*/%@&|^~<>=!]|\b(?:and|or|not|lambda|if|else|in|is|await)\b")


def summarize(text: str, module: str, path: str, is_package: bool) -> ModuleSummary:
    """Parse a whole module and summarise it. Raises InputError for unparsable input."""
    check_nesting(text)
    try:
        tree = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise InputError(f"syntax error: {exc.message}", exc.raw_line) from None
    except RecursionError:
        raise InputError("nesting too deep to parse") from None
    except Exception as exc:  # libcst's native parser raises plain exceptions on odd input
        raise InputError(f"cannot parse: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
    try:
        wrapper = MetadataWrapper(tree, unsafe_skip_copy=True)
        collector = _Collector(module, is_package, tree.code_for_node)
        wrapper.visit(collector)
    except RecursionError:
        raise InputError("nesting too deep to analyse") from None
    return ModuleSummary(
        module=module, path=path, level="full", imports=tuple(collector.imports),
        star_imports=tuple(collector.star_imports), classes=tuple(collector.classes),
        functions=tuple(collector.functions), module_calls=tuple(collector.module_calls),
        assignments=tuple(collector.assignments),
    )


