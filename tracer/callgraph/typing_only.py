"""Code that exists for the type checker, and the class hooks of typing's machinery.

* ``if TYPE_CHECKING:`` (``typing.TYPE_CHECKING``, ``not TYPE_CHECKING``) is False at run time:
  its body never runs, so nothing in it calls or binds (a stub ``def`` there is no callee; the
  ``else`` is what runs). Its imports are still what the annotations of the module mean: they are
  compiled into variables only annotations read (:func:`annotation_expr`).
* a class's ``__getattr__`` is not asked for a name its body or its ``__init__`` binds
  (:func:`getattr_unless_set`): that read succeeds whatever its value.
* ``__init_subclass__`` and ``__class_getitem__`` are class methods without the decorator
  (:func:`implicit_classmethod`). ``class Sub(Base)`` calls ``Base.__init_subclass__`` with
  ``cls`` Sub, from the scope running the class statement (its module: :func:`init_subclass_calls`);
  ``C[int]`` calls ``C.__class_getitem__`` (:func:`item_value`).
* ``"{}".format(x)`` formats x as ``f"{x}"`` does: its ``__format__``, else ``__str__`` (a ``str``
  subclass's own ``__str__`` included: ``str.__format__`` calls ``str(self)``) (:func:`format_dunders`);
  ``"%s" % x`` calls ``str(x)``, ``%r`` ``repr`` (abstract.percent_dunders); where a builtin base
  (``str``, ``int``, an exception, an enum) gives the ``__str__``, the tree's ``__repr__`` is no
  fallback of any of them (:func:`dunder_value`).
"""

from __future__ import annotations

import ast
from typing import Any

from tracer.callgraph import watchers as w
from tracer.callgraph.dictlike import MAPPED
from tracer.callgraph.keys import read_in_source

BUILTIN_STR = {"str", "int", "float", "complex", "bool", "bytes", "BaseException"}
ENUMS = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}
IMPLICIT_CLASSMETHODS = ("__init_subclass__", "__class_getitem__")
Value = tuple[Any, ...]


def type_checking(test: ast.expr) -> bool | None:
    """True for ``TYPE_CHECKING``, False for ``not TYPE_CHECKING``, None for any other test."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    node = test.operand if isinstance(test, ast.UnaryOp) and negated else test
    named = isinstance(node, ast.Name) and node.id == "TYPE_CHECKING" or (
        isinstance(node, ast.Attribute) and node.attr == "TYPE_CHECKING")
    return (not negated) if named else None


def typing_block(c: Any, scope: Any, node: ast.If) -> bool:
    """``if TYPE_CHECKING:``: only the branch that runs is compiled; the other's imports bind
    names for the annotations alone (the module's namespace and every other read never see them)."""
    typed, runtime = (node.body, node.orelse) if type_checking(node.test) else (node.orelse, node.body)
    start = dict(scope.env)
    for stmt in typed:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            c.stmt(scope, stmt)
    names = c.__dict__.setdefault("typing_names", {})
    for name, versions in scope.env.items():
        if start.get(name) != versions:
            names.setdefault(name, set()).update(versions - start.get(name, frozenset()))
    scope.env = start
    return bool(c.block(scope, runtime))


def annotation_expr(c: Any, scope: Any, node: ast.expr) -> int:
    """The var of a name an annotation writes: what it means at run time, and its ``TYPE_CHECKING`` import."""
    typed = c.__dict__.get("typing_names", {}).get(node.id) if isinstance(node, ast.Name) else None
    var = c.expr(scope, node)
    if not typed:
        return int(var)
    dst = c.var()
    c.copy(dst, var)
    for v in sorted(typed):
        c.copy(dst, v)
    return int(dst)


def implicit_classmethod(c: Any, scope: Any, node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, int]]:
    """The ``classmethod`` decorator Python applies itself to these two hooks, innermost."""
    if scope.kind != "class" or node.name not in IMPLICIT_CLASSMETHODS or any(
            isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list):
        return []
    return [(c.expr(scope, ast.Name("classmethod", ast.Load())), node.lineno)]


def item_value(s: Any, v: Value, key: int, dst: int, caller: int = -1, line: int = 0) -> None:
    """``obj[key]`` (moved from solve.py): an instance's ``__getitem__``, a container's slots, a
    class's ``__class_getitem__`` (``C[int]``), ``globals()[name]``."""
    if v[0] == "i" and caller >= 0 and "__getitem__" in s.dunders:
        s.implicit_call(v, ("__getitem__",), -1, (), caller, line)
    elif v[0] == "o":
        w.read_slots(s, v[1], key, dst)
        read_in_source(s, v, key, caller, line)  # in the source: a defaultdict's factory runs, a key hashed
    elif v[0] == "G" and key >= 0:
        s.each(key, lambda k: s.edge(s.export(v[1], k[2]), dst), "k")
    elif v[0] == "c" and caller >= 0 and "__class_getitem__" in s.dunders:
        site = s.site(dst, ((key, False),) if key >= 0 else (), caller, line, "implicit")
        s.subscribe(v[1], "__class_getitem__", s.method_caller(site, v))


def getattr_unless_set(s: Any, inst: Value, site: Any, name: str) -> None:
    """``inst.name`` found nothing: the class's ``__getattr__`` runs (attrs.instance_getattr), unless
    a class of the MRO binds the name in its body or its ``__init__`` sets it on self: then normal
    lookup succeeds and only the value is unknown (an argument from outside, an external call's)."""
    for k in s.mro(inst[1]):
        if name in s.class_attrs[k] or name in s.init_fields.get(k, ()):
            return
    s.instance_getattr(inst, site)


def format_dunders(c: Any, scope: Any, args: tuple[tuple[int, bool], ...], kwargs: tuple[tuple[str | None, int], ...],
                   line: int) -> None:
    """``"{}: {}".format(a, b)``: each argument formatted as an f-string's field is (``__format__``,
    whose ``object`` default is ``__str__``; a ``str`` subclass's too)."""
    for var in (*(v for v, starred in args if not starred), *(v for k, v in kwargs if k is not None)):
        if var >= 0:
            c.emit("dunder", -1, var, ("__format__", "__str__", "__repr__"), (), scope.edge, line)


def builtin_str(s: Any, cid: int) -> bool:
    """Whether a base outside the tree gives class ``cid`` its ``__str__``/``__format__`` (``str``,
    ``int``, an exception, an enum): then ``str(x)`` runs that, not the tree's ``__repr__``."""
    for k in s.mro(cid):
        for var in s.class_bases[k]:
            for b in tuple(s.pts.get(var, ())):
                name = b[1] if b[0] in "Bx" and isinstance(b[1], str) else ""
                tail = name.rsplit(".", 1)[-1]
                if b[0] == "B" and (name in BUILTIN_STR or tail.endswith(("Error", "Exception", "Warning"))) or (
                        b[0] == "x" and tail in ENUMS):
                    return True
    return False


def implicit_call(s: Any, v: Value, names: tuple[str, ...], dst: int, args: tuple[int, ...], caller: int,
                  line: int) -> None:
    """calls.implicit_call of the ``names`` some class defines (all are given: the ``__str__`` no class
    defines still says a ``__repr__`` is its fallback), less a fallback that is none (:func:`dunder_value`)."""
    kept = tuple(n for n in names if n in s.dunders or n in MAPPED)  # `in`: a Mapping's __getitem__ (dictlike)
    if kept and not str_builtin(s, v, names):
        s.implicit_call(v, kept, dst, args, caller, line)


def dunder_value(s: Any, v: Value, names: tuple[str, ...], site: Any) -> None:
    """calls.dunder_value, but ``str(x)``, ``"%s" % x``, ``f"{x}"`` of an instance whose ``__str__``
    (``__format__``) the tree does not define and a builtin base does (``class Token(str)``) runs
    the builtin's: the tree's ``__repr__`` is no fallback there."""
    if not str_builtin(s, v, names):
        s.dunder_value(v, names, site)


def str_builtin(s: Any, v: Value, names: tuple[str, ...]) -> bool:
    if names[-1] != "__repr__" or names[0] not in ("__str__", "__format__") or "__str__" not in names:
        return False
    cid = v[1]
    return all(s.lookup(cid, n) is None for n in names[:-1]) and builtin_str(s, cid)


def init_subclass_calls(s: Any) -> None:
    """Each class with bases calls the ``__init_subclass__`` its MRO finds after it (the class's
    own runs for its subclasses only), ``cls`` the class, from its module's body."""
    if "__init_subclass__" not in s.dunders:
        return
    module_scope: dict[str, int] = {}
    for uid, scope in enumerate(s.scopes):
        if scope.kind == "module":
            module_scope.setdefault(s.scope_module[uid], uid)
    for cid, bases in enumerate(s.class_bases):
        caller = module_scope.get(s.class_module[cid], -1)
        if bases and caller >= 0:
            site = s.site(-1, (), caller, 0, "implicit")
            s.subscribe(cid, "__init_subclass__", s.method_caller(site, s.V("c", cid)), after=cid)


__all__ = ["annotation_expr", "builtin_str", "dunder_value", "implicit_call", "format_dunders", "getattr_unless_set", "implicit_classmethod", "init_subclass_calls", "item_value", "type_checking",
           "typing_block"]
