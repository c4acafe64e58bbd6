"""Model registries written as dict literals: ``{"Arch": ("module", "Class"), ...}``.

Some frameworks list their entry classes in one table instead of a variable in
every model module. The table is read statically (``ast.literal_eval`` on each
entry, never importing the module); ``**OTHER_TABLE`` spreads are followed
inside the same module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class RegistryEntry:
    architecture: str
    module: str  # absolute dotted module (the registry's package prefix applied)
    class_name: str
    line: int


def read_registry(text: str, variables: tuple[str, ...], package: str) -> list[RegistryEntry]:
    """Entries of the named dict literals in module source ``text``; later duplicates lose."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    tables: dict[str, ast.Dict] = {}
    for node in tree.body:
        target, value = _assignment(node)
        if target and isinstance(value, ast.Dict):
            tables[target] = value
    found: dict[str, RegistryEntry] = {}
    for variable in variables:
        for entry in _entries(tables, variable, package, set()):
            found.setdefault(entry.architecture, entry)
    return list(found.values())


def _assignment(node: ast.stmt) -> tuple[str, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return "", None


def _entries(tables: dict[str, ast.Dict], variable: str, package: str, seen: set[str]):
    table = tables.get(variable)
    if table is None or variable in seen:
        return
    seen.add(variable)
    for key, value in zip(table.keys, table.values):
        if key is None:  # **OTHER_TABLE
            if isinstance(value, ast.Name):
                yield from _entries(tables, value.id, package, seen)
            continue
        try:
            arch = ast.literal_eval(key)
            module, class_name = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError):
            continue  # not a plain ("module", "Class") pair: not statically readable
        if not (isinstance(arch, str) and isinstance(module, str) and isinstance(class_name, str)):
            continue
        absolute = module if not package or module.startswith(package.split(".")[0] + ".") else f"{package}.{module}"
        yield RegistryEntry(arch, absolute, class_name, key.lineno)
