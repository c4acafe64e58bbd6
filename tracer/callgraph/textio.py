"""A class of the tree that subclasses ``io.TextIOWrapper`` (click's ``_NonClosingTextIOWrapper``,
its test runner's ``_NamedTextIOWrapper``): the wrapper's C methods call the binary buffer it was
given, and those calls are the tree's own methods (or its ``__getattr__`` hook) when the buffer is
an instance of a class of the tree. Measured on CPython 3.11 with a buffer whose class logs every
attribute asked of it: ``__init__`` asks ``readable``, ``writable``, ``seekable``, ``tell``;
reading asks ``closed`` and calls ``read1``; writing and flushing call ``write`` and ``flush``;
``close`` calls ``flush`` and ``close``. The buffer is the wrapper's ``buffer`` attribute, as in
Python. Plain functions of the solver, hooked from attrs.py (a method the tree's MRO does not
define, read off such an instance or its ``super()``) and calls.py (the call of it)."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Value

TEXTIO = "io.TextIOWrapper"
# method of the wrapper -> (methods of the buffer it calls, attributes of the buffer it reads)
CALLS = {
    "__init__": (("readable", "writable", "seekable", "tell"), ()),
    "read": (("read1",), ("closed",)),
    "readline": (("read1",), ("closed",)),
    "readlines": (("read1",), ("closed",)),
    "write": (("write",), ("closed",)),
    "flush": (("write", "flush"), ("closed",)),
    "close": (("flush", "close"), ("closed",)),
}


def wraps_textio(s: Any, cid: int) -> bool:
    """Whether ``io.TextIOWrapper`` is a base of the class (or of a class in its MRO)."""
    return any(v[0] == "x" and v[1] == TEXTIO for k in s.mro(cid) for b in s.class_bases[k]
               for v in s.pts.get(b, ()))


def textio_attr(s: Any, v: Value, name: str, var: int) -> None:
    """``inst.read`` / ``super().__init__`` on a TextIOWrapper subclass the tree's MRO leaves empty:
    the wrapper's own method, bound to the instance."""
    recv = v if v[0] == "i" else v[2]
    if recv[0] != "i" or name not in CALLS:
        return
    s.when_empty(var, lambda: wraps_textio(s, recv[1]) and s.add(var, (s.V("x", "io." + name, recv),)), late=True)


def textio_call(s: Any, site: Any, name: str, inst: Value) -> None:
    """The wrapper's method ``name`` called on ``inst``: what it asks of ``inst.buffer``."""
    key = (site.caller, site.line, name, inst)  # not the site: the buffer may be a wrapper too (a loop)
    if key in s.textio_done:
        return
    s.textio_done.add(key)
    holder = s.new_var()
    s.add(holder, (inst,))
    if name == "__init__":
        buffer = s.arg(site, 0, "buffer")
        s.setattr_instr(holder, "buffer", buffer, site.caller, site.line)
    else:
        buffer = s.new_var()
        s.attr_instr(buffer, holder, "buffer", site.caller, site.line)
    methods, attributes = CALLS[name]
    for attr in attributes:
        s.attr_instr(s.new_var(), buffer, attr, site.caller, site.line)
    for method in methods:
        fn = s.new_var()
        s.attr_instr(fn, buffer, method, site.caller, site.line)
        s.call_on(fn, s.site(-1, (), site.caller, site.line, "implicit"))
