"""Compile-time scopes: which names a scope binds (Python's rule), SSA versions of
locals, lambda numbering, and how a name read is found (LEGB, class bodies skipped
by the functions inside them)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(eq=False)
class Scope:
    kind: str  # "module" | "function" | "lambda" | "class"
    qual: str  # qualified name inside the module ("" for the module body)
    edge: int  # index of the ScopeIR that calls made here belong to
    parent: Scope | None
    bound: set[str] = field(default_factory=set)  # names bound in this scope
    global_decl: set[str] = field(default_factory=set)
    nonlocal_decl: set[str] = field(default_factory=set)
    env: dict[str, frozenset[int]] = field(default_factory=dict)  # name -> reaching versions
    versions: dict[str, list[int]] = field(default_factory=dict)  # name -> every version
    whole: dict[str, int] = field(default_factory=dict)  # name -> var of all its versions (closures)
    params: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (index, initial var)
    first_param: int = -1  # var of self / cls in a method (zero-argument super())
    owner: int = -1  # local class index: of a method's class, or of the class a class body defines
    lambdas: dict[int, str] = field(default_factory=dict)  # id(Lambda node) -> "<lambdaN>"
    generator: bool = False
    ret: int = -1
    yields: int = -1
    passthrough: set[int] = field(default_factory=set)

    def child_qual(self, name: str) -> str:
        return f"{self.qual}.{name}" if self.qual else name

    def function_parent(self) -> Scope | None:
        """The enclosing scope whose names a nested function sees (class bodies are skipped)."""
        p = self.parent
        while p is not None and p.kind == "class":
            p = p.parent
        return p


def _own_nodes(body: list[ast.stmt] | list[ast.expr]):  # type: ignore[no-untyped-def]
    """Every node of a scope's code, not entering nested scopes' bodies (their decorators,
    defaults and bases run here and are included)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            children: list[ast.AST] = [*node.decorator_list, *node.args.defaults,
                                       *[d for d in node.args.kw_defaults if d is not None]]
            children += [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)
                         if a.annotation is not None]
        elif isinstance(node, ast.ClassDef):
            children = [*node.decorator_list, *node.bases, *[k.value for k in node.keywords]]
        elif isinstance(node, ast.Lambda):
            children = [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend(reversed(children))


def _targets(target: ast.AST, out: set[str]) -> None:
    if isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _targets(elt, out)
    elif isinstance(target, ast.Starred):
        _targets(target.value, out)


def analyse_scope(scope: Scope, body: list[ast.stmt] | list[ast.expr]) -> None:
    """Fill ``bound``, the declarations, ``generator`` and the lambda names of a scope."""
    bound: set[str] = set()
    lambdas: list[ast.Lambda] = []
    in_comprehension: set[int] = set()
    for node in _own_nodes(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Lambda):
            lambdas.append(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if id(node) not in in_comprehension:
                bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Global):
            scope.global_decl.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocal_decl.update(node.names)
        elif isinstance(node, (ast.ExceptHandler,)) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            scope.generator = True
        elif isinstance(node, COMPREHENSIONS):
            for gen in node.generators:  # comprehension targets live in their own scope
                for sub in ast.walk(gen.target):
                    in_comprehension.add(id(sub))
        elif isinstance(node, ast.MatchAs) and node.name:
            bound.add(node.name)
    scope.bound = bound - scope.global_decl - scope.nonlocal_decl
    lambdas.sort(key=lambda n: (n.lineno, n.col_offset))
    scope.lambdas = {id(n): f"<lambda{i}>" for i, n in enumerate(lambdas, 1)}


def assigned_names(body: list[ast.stmt]) -> set[str]:
    """Names a block (a loop body) binds in its own scope: the loop's phi variables."""
    out: set[str] = set()
    for node in _own_nodes(body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
    return out
