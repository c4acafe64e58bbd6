"""The two call shapes every engine must read alike, recognised in one place on the stdlib
``ast``: a ``super()`` call (plain, or its two-argument form ``super(C, obj)``) and a
``hasattr(obj, "name")`` test. The summarisers, the value flow, the argument and config
chains and the call-graph solver ask these functions; what each does with the answer is
its own business (tests/test_architecture.py keeps the literals here)."""

from __future__ import annotations

import ast
from typing import NamedTuple

# builtins whose call is a bool whatever the arguments (the value flow's answer for them)
BOOLEAN_BUILTINS = frozenset({"hasattr", "isinstance", "callable"})


class SuperCall(NamedTuple):
    """``super()`` (both None) or ``super(cls, obj)``: the first two arguments as written
    (a one-argument ``super(cls)`` has no ``obj``: it binds nothing, like the plain form here)."""

    cls: ast.expr | None
    obj: ast.expr | None

    @property
    def explicit(self) -> bool:
        """The two-argument form: the search starts after ``cls`` in ``type(obj)``'s MRO."""
        return self.obj is not None


def super_call(node: ast.AST | None) -> SuperCall | None:
    """``node`` as a call of the name ``super`` (any arguments), else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"):
        return None
    args = node.args
    return SuperCall(args[0] if args else None, args[1] if len(args) >= 2 else None)


def super_method(node: ast.AST | None) -> str | None:
    """``super().m`` / ``super(C, obj).m`` (the attribute, not yet called): ``m``, else None."""
    if isinstance(node, ast.Attribute) and super_call(node.value) is not None:
        return node.attr
    return None


class HasattrTest(NamedTuple):
    receiver: ast.expr
    name: str


def hasattr_test(node: ast.AST | None) -> HasattrTest | None:
    """``hasattr(receiver, "name")`` (two arguments, the name a string literal), else None.
    (Any other shape raises in Python or names the attribute only at run time.)"""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr"
            and len(node.args) == 2):
        return None
    name = node.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    return HasattrTest(node.args[0], name.value)


__all__ = ["BOOLEAN_BUILTINS", "HasattrTest", "SuperCall", "hasattr_test", "super_call", "super_method"]
