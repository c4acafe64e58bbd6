"""Implicit calls: which dunder an operator, a comparison, a builtin or a protocol runs, and the
compilation of the expressions that make them (a mixin of the expression compiler)."""

from __future__ import annotations

import ast
import re
from typing import Any

from tracer.callgraph.abstract import percent_dunders
from tracer.callgraph.scopes import Scope

# an operator calls its left operand's method (the reflected one is not followed: it runs only
# when the left one is missing or declines)
BINOPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.MatMult: "__matmul__",
          ast.Div: "__truediv__", ast.FloorDiv: "__floordiv__", ast.Mod: "__mod__", ast.Pow: "__pow__",
          ast.LShift: "__lshift__", ast.RShift: "__rshift__", ast.BitOr: "__or__", ast.BitXor: "__xor__",
          ast.BitAnd: "__and__"}
UNARY = {ast.USub: "__neg__", ast.UAdd: "__pos__", ast.Invert: "__invert__"}
COMPARE = {ast.Eq: ("__eq__",), ast.NotEq: ("__ne__", "__eq__"), ast.Lt: ("__lt__",), ast.LtE: ("__le__",),
           ast.Gt: ("__gt__",), ast.GtE: ("__ge__",), ast.In: ("__contains__", "__iter__"),
           ast.NotIn: ("__contains__", "__iter__")}


PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")  # a name's start, or a dotted module name's

STR_CASES = {"lower", "upper", "casefold"}  # what a string's case change keeps of a known start
STR_SPLITS = {"split", "rsplit", "partition", "rpartition"}  # a known string's parts: "pkg.mod.fn".rsplit(".", 1)
ITER, AITER = ("__iter__", "__next__"), ("__aiter__", "__anext__")
# builtins that call a method of their argument's type (the first the MRO has, in this order)
ARG_DUNDERS = {"str": ("__str__", "__repr__"), "repr": ("__repr__",), "len": ("__len__",),
               "bool": ("__bool__", "__len__"), "abs": ("__abs__",), "int": ("__int__", "__index__"),
               "float": ("__float__",), "format": ("__format__", "__str__", "__repr__"), "round": ("__round__",),
               "reversed": ("__reversed__",), "divmod": ("__divmod__",), "dir": ("__dir__",),
               "complex": ("__complex__",), "print": ("__str__", "__repr__")}


class OperatorCompiler:
    const_cache: dict[Any, int]

    def var(self) -> int:
        raise NotImplementedError

    def emit(self, *instr: Any) -> None:
        raise NotImplementedError

    def expr(self, scope: Scope, node: ast.AST | None) -> int:
        raise NotImplementedError

    def prefix(self, text: str) -> int:
        """A string known only by how it starts (``f"parse_{name}"``): ``getattr`` with it reads every
        attribute of that prefix; -1 when the start is no name's start."""
        if not PREFIX.fullmatch(text):
            return -1
        found = self.const_cache.get(("prefix", text))
        if found is None:
            found = self.const_cache[("prefix", text)] = self.var()
            self.emit("const", found, ("k", "prefix", text))
        return found

    def operator(self, scope: Scope, node: ast.AST) -> int | None:
        """The var of an operator expression (f-strings, binary and unary operators, comparisons),
        None when node is none of them."""
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                self.expr(scope, part)
            first = node.values[0] if node.values else None
            if len(node.values) > 1 and isinstance(first, ast.Constant) and isinstance(first.value, str):
                return self.prefix(first.value)
            return -1
        if isinstance(node, ast.BinOp):
            left, right = self.expr(scope, node.left), self.expr(scope, node.right)
            dst = -1
            if (isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
                    and isinstance(node.left.value, str) and "%" in node.left.value):
                percent_dunders(self, scope, node, right)  # "%s" % x: str(x) (abstract.py)
                return self.prefix(node.left.value[:node.left.value.index("%")])
            if isinstance(node.op, ast.Add) and left >= 0 and right >= 0:
                dst = self.var()
                self.emit("binop", dst, left, right)
            # the edge only: what an operator returns stays unknown (a variable for every arithmetic
            # result of a model's forward was a tenth more memory for the fixpoint, for nothing)
            if left >= 0:
                self.emit("dunder", dst, left, (BINOPS[type(node.op)],), (right,), scope.edge, node.lineno)
            return dst
        if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
            operand = self.expr(scope, node.operand)
            if operand >= 0:
                self.emit("dunder", -1, operand, (UNARY[type(node.op)],), (), scope.edge, node.lineno)
            return -1
        if isinstance(node, ast.Compare):
            left = self.expr(scope, node.left)
            for op, comparator in zip(node.ops, node.comparators):
                right = self.expr(scope, comparator)
                # ``a in b``: b.__contains__(a)
                recv, arg = (right, left) if isinstance(op, (ast.In, ast.NotIn)) else (left, right)
                if type(op) in COMPARE and recv >= 0:
                    self.emit("dunder", -1, recv, COMPARE[type(op)], (arg,), scope.edge, node.lineno)
                left = right
            return -1
        if isinstance(node, ast.FormattedValue):
            value = self.expr(scope, node.value)
            self.expr(scope, node.format_spec)
            if value >= 0:
                names = {115: ("__str__", "__repr__"), 114: ("__repr__",), 97: ("__repr__",)}.get(
                    node.conversion, ("__format__", "__str__", "__repr__"))
                self.emit("dunder", -1, value, names, (), scope.edge, node.lineno)
            return -1
        return None
