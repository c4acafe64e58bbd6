"""Generators as run time sees them, ``iter()``, ``f(*args)`` by position, and what a slice holds:
functions of the solver (``s``), hooked into its iteration, call, builtin and subscript rules.

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
Consumer edges are drawn once the fixpoint is done (they move no value).
"""

from __future__ import annotations

from typing import Any

Value = tuple[Any, ...]


def resumed(s: Any, uid: int, caller: int, line: int) -> None:
    """A generator of scope ``uid`` is iterated from scope ``caller``: its body runs there (the edge
    is drawn after the fixpoint, :func:`resume_consumed`)."""
    if caller >= 0:
        s.__dict__.setdefault("gen_consumers", {}).setdefault((caller, uid), line)


def resume_consumed(s: Any) -> None:
    """The consumer edges (after the fixpoint: they move no value)."""
    consumers = s.__dict__.pop("gen_consumers", {})
    if not consumers:
        return
    stored = mixed_in_attributes(s)
    unresumed = 0
    for (caller, uid), line in consumers.items():
        if uid in stored:
            unresumed += 1
        elif (caller, uid) not in s.edges:
            s.add_edge(s.site(-1, (), caller, line, "implicit"), uid)
    s.gens_unresumed = unresumed


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
    iterator yields the list's elements). ``iter(fn, sentinel)`` calls ``fn`` only as its iterator
    is consumed, by the consumer (more-itertools' chunked returns iter(partial(take, ...), []) to
    its caller): no value of the solver stands for such an iterator yet, so nothing is drawn."""
    source = s.arg(site, 0)
    if source < 0 or len(site.args) >= 2:
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


def spread_by_position(s: Any, site: Any, at_arg: int, uid: int, positional: list[int], star: int) -> bool:
    """``f(*args)``, the call's last and only starred argument, ``args`` a tuple or list of known
    length (a literal, ``(T.Keyword, 'END')``): element ``k`` binds the ``k``-th remaining
    positional parameter, not every one of them (every element into every parameter made
    sqlparse's ``match(*pattern)`` see a token type as its ``values``); past them, ``*args``. Any
    other value (unknown length, an instance, a generator) spreads its elements into all of them,
    as before. False (nothing done) when the argument is not the only starred one or the last."""
    if at_arg != len(site.args) - 1 or any(st for _, st in site.args[:at_arg]):
        return False
    base, params = s.scope_base[uid], s.scopes[uid].params
    targets = tuple(s.param_in(params[i].var + base) for i in positional)
    oid = ("star", uid) if star >= 0 else None
    rest = s.new_var()  # the elements of what has no known length: every target
    for target in targets:
        s.edge(rest, target)
    if oid is not None:
        s.write(oid, None, rest)
    s.on(site.args[at_arg][0], ("", spread_value, rest, site.caller, targets, oid))
    return True


def spread_value(s: Any, v: Value, rest: int, caller: int, targets: tuple[int, ...], star: Any) -> None:
    n = s.obj_len.get(v[1], -1) if v[0] == "o" and s.obj_kind.get(v[1]) in ("tuple", "list") else -1
    if n < 0:
        s.iter_value(v, rest, caller, 0)
        return
    for k in range(n):
        key = s.V("k", "int", k)
        if k < len(targets):
            s.read(v[1], key, targets[k])
        elif star is not None:
            slot = s.new_var()
            s.read(v[1], key, slot)
            s.write(star, None, slot)
