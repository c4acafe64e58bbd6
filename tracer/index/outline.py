"""Outline of a module: where its definitions are, without their bodies.

The outline gives imports, class headers (bases, class-level annotations and
attributes), module-level ``NAME = names`` assignments (``EntryClass``) and the
line span of every method and function. It uses the standard library's
``ast`` only to locate definitions, because it is an order of magnitude
faster than libcst with positions; every body that a later stage needs is
summarised one method at a time (``index.methods.summarize_function``).
A protocol scan thus parses the few methods on a chain, not whole modules.
What it parses is the module's skeleton (``index.skeleton``: every function body
blanked, its imports kept), several times cheaper than the module; a syntax error
inside a body is reported when that body is read (``Project.function``).
"""

from __future__ import annotations

import ast

from tracer.bind.syntax import super_call
from tracer.index.skeleton import skeleton
from tracer.index.source import resolve_relative
from tracer.model.errors import InputError
from tracer.model.summary import ClassDef, Import, ModuleSummary


def _dotted(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    if super_call(node) is not None:
        return "super()"
    return ""


def _start(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def _src(text_lines: list[str], node: ast.AST) -> str:
    try:
        segment = ast.get_source_segment("\n".join(text_lines), node) or ""
    except Exception:  # pragma: no cover
        segment = ""
    return " ".join(segment.split())[:80]


class _Outliner:
    def __init__(self, module: str, is_package: bool):
        self.module = module
        self.is_package = is_package
        self.imports: list[Import] = []
        self.star_imports: list[str] = []
        self.classes: list[ClassDef] = []
        self.function_spans: list[tuple[str, int, int]] = []
        self.assignments: list[tuple[str, tuple[str, ...], int]] = []

    def run(self, tree: ast.Module) -> None:
        self._body(tree.body, ())
        self._module_imports(tree.body, ())

    def _module_imports(self, body: list[ast.stmt], condition: tuple[tuple[str, bool], ...]) -> None:
        """Imports anywhere (inside functions too) bind names the code uses; at module
        level each one keeps the tests it sits under (a platform-conditional binding)."""
        for node in body:
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                self._module_imports(node.body, condition + ((test, True),))
                self._module_imports(node.orelse, condition + ((test, False),))
            elif isinstance(node, ast.Try):
                self._module_imports(node.body + node.orelse, condition + (("<try>", True),))
                for handler in node.handlers:
                    self._module_imports(handler.body, condition + (("<try>", False),))
                self._module_imports(node.finalbody, condition)
            elif isinstance(node, (ast.With, ast.For, ast.While)):
                self._module_imports(node.body, condition)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node, condition)
            elif isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and not condition:
                # PEP 562 lazy attributes: the imports a module's __getattr__ makes bind
                # its names at run time, under the tests inside it (the test on the
                # requested name itself is the dispatch, not a condition)
                asked = node.args.args[0].arg if node.args.args else ""
                self._lazy_imports(node.body, (("<lazy>", True),), asked)
            else:
                for inner in _nested_imports(node):
                    self._import(inner, ())

    def _lazy_imports(self, body: list[ast.stmt], condition: tuple[tuple[str, bool], ...], asked: str) -> None:
        for node in body:
            if isinstance(node, ast.If):
                names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
                if asked in names:
                    self._lazy_imports(node.body + node.orelse, condition, asked)
                    continue
                test = ast.unparse(node.test)
                self._lazy_imports(node.body, condition + ((test, True),), asked)
                self._lazy_imports(node.orelse, condition + ((test, False),), asked)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node, condition)
            else:
                for inner in _nested_imports(node):
                    self._import(inner, condition)

    def _import(self, node: ast.Import | ast.ImportFrom, condition: tuple[tuple[str, bool], ...]) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports.append(Import(alias.asname, alias.name, node.lineno, condition))
                else:
                    self.imports.append(Import(alias.name.split(".")[0], alias.name.split(".")[0], node.lineno,
                                               condition))
                    if "." in alias.name:
                        self.imports.append(Import(alias.name, alias.name, node.lineno, condition))
            return
        base = resolve_relative(self.module, self.is_package, node.level or 0, node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.star_imports.append(base)
                continue
            local = alias.asname or alias.name
            self.imports.append(Import(local, f"{base}.{alias.name}" if base else alias.name, node.lineno, condition))

    def _body(self, body: list[ast.stmt], condition: tuple[tuple[str, bool], ...]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                self._class(node, "", condition)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function_spans.append((node.name, _start(node), node.end_lineno or node.lineno))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values = _values(node.value)
                if values:
                    self.assignments.append((node.targets[0].id, values, node.lineno))
            elif isinstance(node, ast.If):
                test = ast.unparse(node.test)
                self._body(node.body, condition + ((test, True),))
                self._body(node.orelse, condition + ((test, False),))
            elif isinstance(node, ast.Try):
                self._body(node.body + node.orelse, condition + (("<try>", True),))
                for handler in node.handlers:
                    self._body(handler.body, condition + (("<try>", False),))
                self._body(node.finalbody, condition)

    def _class(self, node: ast.ClassDef, prefix: str, condition: tuple[tuple[str, bool], ...] = ()) -> None:
        qualname = f"{prefix}.{node.name}" if prefix else node.name
        bases = tuple(_dotted(b) or ast.unparse(b)[:80] for b in node.bases)
        annotations, class_attrs, spans = [], [], []
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spans.append((stmt.name, _start(stmt), stmt.end_lineno or stmt.lineno))
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                annotations.append((stmt.target.id, _dotted(stmt.annotation)))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                if _dotted(stmt.value):
                    class_attrs.append((stmt.targets[0].id, _dotted(stmt.value)))
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, qualname)
        self.classes.append(ClassDef(
            name=node.name, qualname=qualname, line=node.lineno, col=node.col_offset, bases=bases,
            annotations=tuple(annotations), class_attrs=tuple(class_attrs),
            method_spans=tuple(spans), condition=condition,
        ))


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _blocks(node: ast.AST) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for name in _BLOCK_FIELDS:
        block = getattr(node, name, None)
        if block:
            found.extend(block)
    return found


def _statements(body: list) -> list[ast.AST]:
    """Every statement in ``body`` and in the blocks nested in it (functions,
    classes, if/for/while/with/try/match), without descending into expressions."""
    found: list[ast.AST] = []
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        found.append(node)
        for name in _BLOCK_FIELDS:
            block = getattr(node, name, None)
            if block:
                stack.extend(reversed(block))
    return found


def _nested_imports(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """The imports inside a def's or class's blocks, in source order (the first binding of a
    name is the one a lookup takes; the order does not depend on how bodies nest)."""
    found = [n for n in _statements(list(_blocks(node))) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _values(value: ast.expr) -> tuple[str, ...]:
    if _dotted(value):
        return (_dotted(value),)
    if isinstance(value, (ast.List, ast.Tuple)):
        names = tuple(_dotted(e) for e in value.elts)
        if names and all(names):
            return names
    return ()


def _parse(text: str) -> ast.Module:
    """The module's ast; InputError when the running Python's parser refuses it."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        from tracer.index.newer_syntax import needs_newer

        raise InputError(f"syntax error: {exc.msg}{needs_newer(text, exc.lineno)}", exc.lineno or 1) from None
    except (RecursionError, MemoryError):
        raise InputError("nesting too deep to parse", 1) from None
    except ValueError as exc:
        raise InputError(f"cannot parse: {exc}", 1) from None


def module_error(text: str) -> InputError | None:
    """What parsing the whole module says is wrong with it (None: it parses)."""
    try:
        _parse(text)
    except InputError as exc:
        return exc
    return None


def outline_summary(text: str, module: str, path: str, is_package: bool) -> ModuleSummary:
    """The outline of one module's source; InputError when it is not Python."""
    tree = None
    reduced = skeleton(text)
    if reduced is not None:
        try:
            tree = ast.parse(reduced)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None  # the module itself says what is wrong (or the skeleton was)
    if tree is None:
        tree = _parse(text)
    outliner = _Outliner(module, is_package)
    try:
        outliner.run(tree)
    except RecursionError:
        raise InputError("nesting too deep to analyse", 1) from None
    return ModuleSummary(
        module=module, path=path, level="outline", imports=tuple(outliner.imports),
        star_imports=tuple(outliner.star_imports),
        classes=tuple(sorted(outliner.classes, key=lambda c: c.line)),
        assignments=tuple(outliner.assignments), function_spans=tuple(outliner.function_spans),
    )
