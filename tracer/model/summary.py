"""Plain data produced by the index stage and consumed by every later stage.

Everything here is a frozen dataclass of strings, ints, bools and tuples, so a
summary can be cached on disk as JSON and compared byte for byte.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field  # noqa: F401
from typing import Any


@dataclass(frozen=True)
class Param:
    name: str
    default: str = ""  # dotted name of the default when it is a name, else ""
    annotation: str = ""  # dotted name of the annotation when it is a name


@dataclass(frozen=True)
class Call:
    """A call made inside a function body, in source order."""

    func: str  # dotted callee: "self.model.set_x", "super().__init__", "foo"; "" if not a name
    line: int
    col: int
    n_args: int  # positional + keyword arguments passed (not counting *args expansions)
    args: tuple[str, ...] = ()  # dotted name (or short source) of each positional argument
    kwargs: tuple[tuple[str, str], ...] = ()  # (keyword, dotted name or short source)
    star_args: bool = False  # *args or **kwargs were passed: argument count is unknown
    guard: str = ""  # "hasattr(<receiver>, <name>)" when guarded by such an if, else ""
    guard_else_writes: tuple[str, ...] = ()  # self.* targets written in the else branch of that guard


@dataclass(frozen=True)
class Write:
    """An assignment to an attribute chain rooted at self (``self.a.b = value``)."""

    target: str  # "self.model.layers_to_capture"
    line: int
    col: int
    value_calls: tuple[str, ...] = ()  # dotted callee of the value, one per if/else alternative
    value_src: str = ""  # short source of the value
    literal_true: bool = False  # value is the constant True


@dataclass(frozen=True)
class Read:
    target: str  # "self.layers_to_capture"
    line: int
    col: int


@dataclass(frozen=True)
class Fallback:
    """An assignment in a branch taken when a parameter is None/empty."""

    param: str
    line: int
    col: int
    target: str  # what is assigned ("self.model.layers_to_capture" or a local name)
    value_src: str
    branch_calls: tuple[str, ...] = ()  # dotted callees called in the same branch (logging?)


@dataclass(frozen=True)
class FallbackSite:
    """A place where a runner function puts layer ids of its own in place of the
    draft's: a handler around a read of a config key, or a branch calling a
    fallback function (tracer.index.fallback_sites)."""

    kind: str  # "except" or "branch"
    function: str  # qualname within the module
    line: int
    col: int
    what: str  # the key read under the try, or the fallback callee
    condition: str  # "except Exception" / the branch's test ("not (aux_layers)" for an else)
    value: str  # what the handler assigns or returns / the fallback call's source
    calls: tuple[str, ...] = ()  # dotted callees in the handler or branch (logging?)
    raises: bool = False  # the handler re-raises


@dataclass(frozen=True)
class SkippedBranch:
    """An ``if`` of a forward whose one branch runs the layers and captures (reads
    the state) while the other runs them too and reads nothing (tracer.index.branches)."""

    line: int
    col: int
    condition: str  # the test under which capture is skipped ("not x" for the else branch)
    runs: str  # short source of what the skipping branch runs instead
    runs_line: int


@dataclass(frozen=True)
class Function:
    name: str
    qualname: str  # within the module: "Class.method" or "func"
    line: int
    col: int
    end_line: int
    params: tuple[Param, ...] = ()
    calls: tuple[Call, ...] = ()
    writes: tuple[Write, ...] = ()
    reads: tuple[Read, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()
    local_types: tuple[tuple[str, str], ...] = ()  # (local name, dotted callee) from `x = Foo(...)`
    returns: tuple[str, ...] = ()  # dotted callees of returned calls ("=name" for a returned name)
    # (param, first, last line of the branch taken when param is None, first, last line of the other branch)
    none_branches: tuple[tuple[str, int, int, int, int], ...] = ()


@dataclass(frozen=True)
class ClassDef:
    name: str
    qualname: str
    line: int
    col: int
    bases: tuple[str, ...] = ()  # dotted source of each base
    methods: tuple[Function, ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()  # class-level `attr: Type`
    class_attrs: tuple[tuple[str, str], ...] = ()  # class-level `attr = Name`
    method_spans: tuple[tuple[str, int, int], ...] = ()  # (name, first line, last line) of each method
    condition: tuple[tuple[str, bool], ...] = ()  # as for Import: the tests a conditional definition sits under

    def spans(self) -> tuple[tuple[str, int, int], ...]:
        """(name, first, last line) of each method, from an outline or a full summary."""
        return self.method_spans or tuple((m.name, m.line, m.end_line) for m in self.methods)

    def method(self, name: str) -> Function | None:
        for method in self.methods:
            if method.name == name:
                return method
        return None


@dataclass(frozen=True)
class Import:
    local: str  # name bound in the module
    target: str  # absolute dotted target: "pkg.mod" or "pkg.mod.Name"
    line: int = 0
    # the module-level tests on the way to this import: (test source, True for its
    # if-branch / False for its else), "<try>" for a try body; () when unconditional
    condition: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class ModuleSummary:
    module: str  # dotted module name relative to the package root
    path: str  # relative to the scanned root
    level: str  # "full" or "outline"
    imports: tuple[Import, ...] = ()
    star_imports: tuple[str, ...] = ()
    classes: tuple[ClassDef, ...] = ()
    functions: tuple[Function, ...] = ()
    module_calls: tuple[Call, ...] = ()  # calls in the module's top-level code
    assignments: tuple[tuple[str, tuple[str, ...], int], ...] = ()  # (name, dotted values, line)
    error: str = ""  # input error: why the module could not be read or parsed
    error_line: int = 0
    function_spans: tuple[tuple[str, int, int], ...] = ()  # (name, first line, last line) of top-level functions

    def spans(self) -> tuple[tuple[str, int, int], ...]:
        """(name, first, last line) of each top-level function, from an outline or a full summary."""
        return self.function_spans or tuple((f.name, f.line, f.end_line) for f in self.functions)

    def cls(self, name: str) -> ClassDef | None:
        for c in self.classes:
            if c.name == name:
                return c
        return None

    def function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None


_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (Param, Call, Write, Read, Fallback, Function, ClassDef, Import, ModuleSummary)
}


_SCALARS = (str, int, bool, float, type(None))
_SHAPES: dict[type, tuple[tuple[str, Any], ...]] = {}  # class -> ((field, its default or _NO_DEFAULT), ...)
_NO_DEFAULT = object()


def _shape(cls: type) -> tuple[tuple[str, Any], ...]:
    shape = _SHAPES.get(cls)
    if shape is None:
        shape = _SHAPES[cls] = tuple(
            (f.name, f.default if f.default is not dataclasses.MISSING else _NO_DEFAULT)
            for f in dataclasses.fields(cls))
    return shape


def to_plain(obj: Any) -> Any:
    """Dataclass tree -> JSON-able data, tagged with type names. A field equal to its
    default is left out (``from_plain`` gets it back from the class): most of a
    summary is empty tuples and zeros, and the cache writes and reads less."""
    kind = type(obj)
    if kind in _SCALARS:
        return obj
    if kind is tuple or kind is list:
        return [to_plain(x) for x in obj]
    if dataclasses.is_dataclass(obj):
        data: dict[str, Any] = {"__t": kind.__name__}
        for name, default in _shape(kind):
            value = getattr(obj, name)
            if default is not _NO_DEFAULT and type(value) is type(default) and value == default:
                continue
            data[name] = to_plain(value)
        return data
    if isinstance(obj, (tuple, list)):
        return [to_plain(x) for x in obj]
    return obj


def from_plain(data: Any, types: dict[str, type] | None = None) -> Any:
    """Inverse of :func:`to_plain`; lists become tuples (dataclasses are frozen).
    ``types``: the dataclasses a tag may name (default: the summary's)."""
    known = _TYPES if types is None else types
    if isinstance(data, dict) and "__t" in data:
        cls = known[data["__t"]]
        kwargs = {k: from_plain(v, known) for k, v in data.items() if k != "__t"}
        return cls(**kwargs)
    if isinstance(data, list):
        return tuple(from_plain(x, known) for x in data)
    return data


__all__ = [
    "Param", "Call", "Write", "Read", "Fallback", "FallbackSite", "SkippedBranch", "Function",
    "ClassDef", "Import", "ModuleSummary", "to_plain", "from_plain", "field",
]
