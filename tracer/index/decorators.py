"""Registries filled by a class decorator: ``@register_auto_model("Arch")`` above a class.

Read from module source with the stdlib ast (never importing it): every top-level
class whose decorator list calls one of the named decorators with a string literal
is registered under that string. The same name registered twice (in one module or
across modules) is a :class:`~tracer.index.registry.Duplicate`: at run time the
registration that executes last wins, which depends on import order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from tracer.index.registry import Duplicate, RegistryEntry


def read_decorated(text: str, module: str, decorators: tuple[str, ...]) -> list[RegistryEntry]:
    """The (architecture, class) rows the named decorators register in module source ``text``;
    ``line`` is the decorator's line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found: list[RegistryEntry] = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and _name(decorator.func) in decorators and decorator.args):
                continue
            first = decorator.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append(RegistryEntry(first.value, module, node.name, decorator.lineno))
    return found


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def duplicates(entries: Iterable[RegistryEntry]) -> list[Duplicate]:
    """Names registered more than once, in the order given (module order): each later row against the first."""
    first: dict[str, RegistryEntry] = {}
    found: list[Duplicate] = []
    for entry in entries:
        if entry.architecture not in first:
            first[entry.architecture] = entry
        elif (entry.module, entry.class_name) != (first[entry.architecture].module, first[entry.architecture].class_name):
            found.append(Duplicate(entry.architecture, first[entry.architecture], entry))
    return found


__all__ = ["duplicates", "read_decorated"]
