"""Generators as run time sees them, ``iter()``, and what a slice holds: functions of the solver
(``s``), hooked into its iteration, builtin and subscript rules.

A call of a generator function (a ``def`` whose body holds ``yield``) returns a generator
object, ``("g", scope)``, and runs none of the body: the body starts at the object's first
``next``, in the frame that asks for it. So the function that consumes it (a ``for``, a
comprehension, ``next()``, ``yield from``, a builtin iterating it: ``list``, ``tuple``,
``sorted``, ``map``, ``f(*g)``, ...) runs its body, often not the one that made it
(``tuple(parsestream(s))``, a pipeline stage iterating the stream it was handed). Both edges
are drawn: the maker's ``call`` and the consumer's ``implicit`` one, each proven by the
generator value reaching the site.

One exception, for precision: a generator stored into an attribute that also holds a
materialised container (``stmt.tokens = self._process(stmt.tokens)``: a list replaced by a lazy
view of it) is one state of that attribute, and attributes are flow-insensitive: every method
iterating the attribute, before the replacement as much as after, would be drawn as running the
generator. Its consumers are not drawn (its maker's edge stays); ``s.gens_unresumed`` counts them.
Consumers are decided once the fixpoint is done (they move no value, only add edges).
"""

from __future__ import annotations

from typing import Any

Value = tuple[Any, ...]


def consumed(s: Any, src: int, caller: int, line: int) -> None:
    """``src`` is iterated from scope ``caller``: a generator it holds runs its body there."""
    if src >= 0 and caller >= 0:
        s.__dict__.setdefault("gen_consumers", []).append((src, caller, line))


def resume_consumed(s: Any) -> None:
    """The consumer edges (after the fixpoint): every generator a consumed variable holds."""
    consumers = s.__dict__.pop("gen_consumers", ())
    if not consumers:
        return
    stored = mixed_in_attributes(s)
    unresumed = set()
    for src, caller, line in consumers:
        for v in tuple(s.pts.get(src, ())):
            if v[0] != "g":
                continue
            if v[1] in stored:
                unresumed.add((caller, v[1]))
            elif (caller, v[1]) not in s.edges:
                s.add_edge(s.site(-1, (), caller, line, "implicit"), v[1])
    s.gens_unresumed = len(unresumed)


def mixed_in_attributes(s: Any) -> set[int]:
    """Generator functions whose generators an instance attribute holds beside a container."""
    out: set[int] = set()
    for var in s.fields.values():
        vals = s.pts.get(var)
        if vals and len(vals) > 1:
            gens = [v[1] for v in vals if v[0] == "g"]
            if gens and any(v[0] == "o" for v in vals):
                out.update(gens)
    return out


def iter_builtin(s: Any, site: Any) -> None:
    """``iter(x)``: what ``type(x).__iter__`` returns (a generator is its own iterator, a list's
    iterator yields the list's elements); ``iter(fn, sentinel)`` calls ``fn`` until the sentinel,
    an iterator of what it returns."""
    source = s.arg(site, 0)
    if source < 0:
        return
    if len(site.args) >= 2:
        oid = ("call", site.id)
        result = s.new_var()
        s.callback(site, source, (), result)
        s.write(oid, None, result)
        if site.dst >= 0:
            s.add(site.dst, (s.new_obj(oid, "list"),))
        return
    s.on(source, ("", iter_value, site))


def iter_value(s: Any, v: Value, site: Any) -> None:
    t = v[0]
    if t in ("g", "o"):
        s.add(site.dst, (v,))
    elif t == "i" and "__iter__" in s.dunders:
        s.implicit_call(v, ("__iter__",), site.dst, (), site.caller, site.line)


def slice_value(s: Any, v: Value, dst: int, caller: int, line: int) -> None:
    """``obj[a:b]``: a list or tuple slice holds (some of) the container's elements, so it stands for
    the container; an instance's ``__getitem__`` runs (the edge), and the instance is kept (a
    sequence class slices to its own kind, as before). A generator, a string or something outside
    the tree slices to nothing the graph follows (a generator cannot be sliced at all: copied
    through, it reached every field a slice was stored in)."""
    t = v[0]
    if t == "o":
        s.add(dst, (v,))
    elif t == "i":
        s.add(dst, (v,))
        if "__getitem__" in s.dunders:
            s.implicit_call(v, ("__getitem__",), -1, (), caller, line)
