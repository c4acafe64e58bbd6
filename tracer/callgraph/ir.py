"""The call graph's intermediate form: one module compiled to flow constraints.

A module (parsed with the stdlib ``ast``, never imported) becomes a list of scopes
(the module body, every function, method and lambda), its classes, and flat
instructions over numbered value variables. Locals are in SSA form (each binding
a new variable, joins by copies), so a flow-insensitive solver over these
instructions is flow-sensitive for locals: ``save = load; save = close; save()``
calls only ``close``. Variables are numbered per module; the solver offsets them.

Instructions are plain tuples (cheap to build, to pickle into the per-file cache,
and to walk), the opcode first:

=========================================  ==========================================
``("func", dst, scope)``                   dst holds the function of a local scope
``("class", dst, cls)``                    dst holds the class object of a local class
``("const", dst, value)``                  a literal: ``("k", repr)`` for str/int keys
``("copy", dst, src)``                     dst gets every value of src
``("glob", dst, name)``                    a module-level name (or a builtin)
``("import", dst, module)``                ``import a.b`` (dst: module ``a``) / ``import a.b as x``
``("from", dst, module, name)``            ``from module import name``
``("star", module)``                       ``from module import *``
``("attr", dst, obj, name, scope, line)``  ``obj.name`` (a property getter runs: an edge)
``("setattr", obj, name, src, scope, line)``
``("item", dst, obj, key)``                ``obj[key]``; key a var or -1 (unknown)
``("setitem", obj, key, src)``
``("slice", dst, obj, scope, line)``       ``obj[lo:hi]`` (bounds not constant, or obj no literal)
``("alloc", dst, kind, n)``                a new list/tuple/dict/set of known length n (or -1)
``("call", dst, fn, args, kwargs, scope, line, kind)``
                                           args: ((var, starred), ...); kwargs: ((name|None, var), ...)
``("decorate", dst, dec, fn, scope, line)``
``("super", dst, cls, self_var, cls_var)`` ``super()`` (cls: local class, -1 for two arguments)
``("iter", dst, obj, scope, line)``        the elements a ``for`` over obj binds (``"aiter"``: ``async for``)
``("unpack", dst, src, index, n)``         element ``index`` of an ``n``-target unpacking
``("star_unpack", dst, src, index, after)``
``("raise", src, scope, line)``            ``raise Cls``: Cls is instantiated
``("instance", dst, src)``                 ``except E as e``: instances of the classes in src
``("isa", dst, src, (cls, ...))``          src narrowed by ``isinstance(src, (cls, ...))`` (guards.py)
``("binop", dst, a, b)``                   ``a + b`` (string keys concatenate, lists join)
``("eval", dst, text, scope, line)``       not emitted: eval stays unknown
=========================================  ==========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Instr = tuple[Any, ...]


@dataclass(frozen=True, slots=True)  # ~40 bytes less each: 135,000 on sglang/srt
class Param:
    name: str
    var: int
    kind: str  # "pos" (positional or keyword) | "posonly" | "kw" (keyword only) | "star" | "dstar"


@dataclass(frozen=True, slots=True)  # ~40 bytes less each: 135,000 on sglang/srt
class ScopeIR:
    """A function, method, lambda or the module body: one node of the graph."""

    name: str  # module-qualified: "pkg.mod", "pkg.mod.Cls.method", "pkg.mod.f.<lambda1>"
    kind: str  # "module" | "function" | "lambda"
    line: int
    params: tuple[Param, ...] = ()
    ret: int = -1  # values returned
    yields: int = -1  # values yielded (-1: not a generator)
    passthrough: tuple[int, ...] = ()  # indices of parameters returned unchanged (identity decorators)
    owner: int = -1  # local class index for a method
    method: str = ""  # "instance" | "static" | "class" for methods defined in a class body
    # a function's or method's code: (first instruction, end, first var, end var, end scope) with what
    # is nested in it; its instructions can be installed again per receiver class (callgraph/clones.py)
    span: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)  # ~40 bytes less each: 135,000 on sglang/srt
class ClassIR:
    name: str  # module-qualified
    line: int
    bases: tuple[int, ...]  # vars of the base expressions (in the defining scope)
    attrs: tuple[tuple[str, int], ...]  # class-body names and the var of each one's final value


@dataclass(frozen=True)
class ModuleIR:
    module: str
    path: str
    is_package: bool
    nvars: int
    scopes: tuple[ScopeIR, ...]  # scopes[0] is the module body
    classes: tuple[ClassIR, ...]
    globals: tuple[tuple[str, int], ...]  # module-level names and the var of their final values
    instrs: tuple[Instr, ...]
    calls: int  # call sites written in the module (for the stats)
    error: str = ""  # why the module could not be compiled ("" when it was)
