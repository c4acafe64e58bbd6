"""Findings about where a protocol's inputs come from, not about one entry's chain.

* ``duplicate-registration``: an architecture name the pack's registry registers twice
  (two ``@register("Arch")`` decorators, or two ``TABLE.update({...})`` rows): only
  one class is ever built for it.
* ``silent-fallback`` (variant ``default-field``): the metadata class the pack names
  (``[argument] default_classes``) defaults its ids field in ``default_method`` when
  the config names none (``if self.<field> is None: self.<field> = ...``) and logs
  nothing on that branch.
"""

from __future__ import annotations

import ast

from tracer.analysis.entries import registry_duplicates
from tracer.checks import finding
from tracer.model.findings import Finding
from tracer.model.protocol import Protocol
from tracer.resolve.resolver import Resolver
from tracer.resolve.tree import classes_named


def source_findings(resolver: Resolver, proto: Protocol) -> list[Finding]:
    return duplicate_findings(resolver, proto) + default_findings(resolver, proto)


def _path(resolver: Resolver, module: str) -> str:
    source = resolver.project.by_module.get(module)
    return source.path if source else module.replace(".", "/") + ".py"


def duplicate_findings(resolver: Resolver, proto: Protocol) -> list[Finding]:
    found = []
    by_decorator = proto.entry_kind == "decorator"
    for dup in registry_duplicates(resolver.project, proto):
        first_file = _path(resolver, dup.first.module if by_decorator else proto.registry_module)
        last_file = _path(resolver, dup.last.module if by_decorator else proto.registry_module)
        found.append(finding(
            "duplicate-registration", "decorator" if by_decorator else "table", protocol=proto.name,
            file=last_file, line=dup.last.line, col=0,
            chain=(f"{dup.first.module}.{dup.first.class_name}", f"{dup.last.module}.{dup.last.class_name}"),
            setter=proto.setter, name=dup.architecture, first=_short(dup.first.module, dup.first.class_name),
            last=_short(dup.last.module, dup.last.class_name),
            first_place=f"{first_file}:{dup.first.line}", last_place=f"{last_file}:{dup.last.line}"))
    return found


def _short(module: str, class_name: str) -> str:
    return f"{module.rsplit('.', 1)[-1]}.{class_name}"


def default_findings(resolver: Resolver, proto: Protocol) -> list[Finding]:
    if not (proto.default_classes and proto.default_method and proto.default_field):
        return []
    project = resolver.project
    found = []
    for ref in classes_named(project, proto, proto.default_classes):
        parsed = project.function_ast(ref.module, f"{ref.qualname}.{proto.default_method}")
        if parsed is not None:
            tree, offset = parsed
            for branch, assign in _defaulting(tree, proto.default_field):
                if any(_is_logging(proto, n) for s in branch for n in ast.walk(s)):
                    continue
                found.append(finding(
                    "silent-fallback", "default-field", protocol=proto.name, file=_path(resolver, ref.module),
                    line=assign.lineno + offset, col=assign.col_offset,
                    chain=(f"{ref.fullname}.{proto.default_method}",), setter=proto.setter,
                    owner_name=ref.name, method=proto.default_method, field=proto.default_field,
                    value=ast.unparse(assign.value)))
    return found


def _defaulting(tree: ast.AST, field: str) -> list[tuple[list[ast.stmt], ast.Assign]]:
    """(branch, last assignment of ``self.<field>`` in it) for each ``if`` that tests
    ``self.<field> is None`` (alone or inside ``elif``)."""
    found = []
    target = f"self.{field}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if not (isinstance(test, ast.Compare) and ast.unparse(test.left) == target and len(test.ops) == 1
                and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            continue
        assigns = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Assign)
                   and any(ast.unparse(t) == target for t in n.targets)]
        if assigns:
            found.append((node.body, max(assigns, key=lambda a: a.lineno)))  # the general case comes last
    return found


def _is_logging(proto: Protocol, node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and proto.is_logging_call(ast.unparse(node.func))


__all__ = ["default_findings", "duplicate_findings", "source_findings"]
