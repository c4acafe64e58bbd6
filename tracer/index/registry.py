"""Model registries written as dict literals: ``{"Arch": ("module", "Class"), ...}``,
or filled by ``TABLE.update({"Arch": "package.module.Class", ...})`` calls whose
values are dotted strings (f-strings over module-level string constants too).

Some frameworks list their entry classes in one table instead of a variable in
every model module. The table is read statically (``ast.literal_eval`` on each
entry, never importing the module); ``**OTHER_TABLE`` spreads are followed
inside the same module. A name registered twice is reported (``duplicates``):
the later registration wins at run time.
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


@dataclass(frozen=True)
class Duplicate:
    architecture: str
    first: RegistryEntry
    last: RegistryEntry  # the one that wins


def read_registry_updates(text: str, variables: tuple[str, ...]) -> tuple[list[RegistryEntry], list[Duplicate]]:
    """Entries of ``VAR.update({...})`` calls (and ``VAR["Arch"] = "..."``) at module level,
    with dotted-string values; a later registration of a name replaces the earlier one."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [], []
    constants: dict[str, str] = {}
    found: dict[str, RegistryEntry] = {}
    duplicates: list[Duplicate] = []

    def add(variable_entry: RegistryEntry) -> None:
        earlier = found.get(variable_entry.architecture)
        if earlier is not None and (earlier.module, earlier.class_name) != (variable_entry.module,
                                                                             variable_entry.class_name):
            duplicates.append(Duplicate(variable_entry.architecture, earlier, variable_entry))
        found[variable_entry.architecture] = variable_entry

    for node in tree.body:
        target, value = _assignment(node)
        if target and isinstance(value, ast.Constant) and isinstance(value.value, str):
            constants[target] = value.value
            continue
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            func = call.func
            if (isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name)
                    and func.value.id in variables and len(call.args) == 1 and isinstance(call.args[0], ast.Dict)):
                pairs = [(k, v) for k, v in zip(call.args[0].keys, call.args[0].values) if k is not None]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            sub = node.targets[0]
            if isinstance(sub.value, ast.Name) and sub.value.id in variables:
                pairs = [(sub.slice, node.value)]
        for key, item in pairs:
            arch, dotted = _string(key, constants), _string(item, constants)
            if not arch or not dotted or "." not in dotted:
                continue
            module, _, class_name = dotted.rpartition(".")
            add(RegistryEntry(arch, module, class_name, key.lineno))
    return list(found.values()), duplicates


def _string(node: ast.expr, constants: dict[str, str]) -> str:
    """A string literal, a module-level string constant, or an f-string of both."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, "")
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion != -1:
                    return ""
                part = _string(value.value, constants)
                if not part:
                    return ""
                parts.append(part)
            else:
                part = _string(value, constants)
                if not part:
                    return ""
                parts.append(part)
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left, constants), _string(node.right, constants)
        return left + right if left and right else ""
    return ""


def read_registration_calls(text: str, calls: tuple[str, ...]) -> list[RegistryEntry]:
    """Rows a plugin registers at run time: ``ModelRegistry.register_model("Arch", "pkg.mod:Class")``
    anywhere in the module (inside the plugin's ``register()`` function, usually), the class as
    ``"module:Class"`` or ``"module.Class"``. A call whose arguments are not literal strings (a class
    object, a name) is not read statically and gives no row."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found: list[RegistryEntry] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            continue
        dotted = _dotted(node.func)
        if not any(dotted == c or dotted.endswith("." + c) or c.endswith("." + dotted) for c in calls):
            continue
        arch, target = _string(node.args[0], {}), _string(node.args[1], {})
        if not arch or not target:
            continue
        module, sep, class_name = target.partition(":")
        if not sep:
            module, _, class_name = target.rpartition(".")
        if module and class_name:
            found.append(RegistryEntry(arch, module, class_name, node.lineno))
    return found


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""
