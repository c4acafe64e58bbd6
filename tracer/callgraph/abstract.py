"""Classes Python never instantiates: an ABC whose ``@abstractmethod`` members are not all
overridden, and a ``typing.Protocol`` class (one naming ``Protocol`` among its bases).

The compiler records, per class body, the abstract members it declares and whether it is a
protocol (:func:`abstract_attr`: a class attribute ``__abstractmethods__``, CPython's own name,
holding their names as string constants, ``<protocol>`` for a protocol). The solver then:

* never creates an instance of such a class (``Storage()`` raises TypeError): no ``__init__``,
  no method of it bound from that construction (:func:`never_made`, calls.construct);
* reads an annotation (or ``except``) naming it as its concrete subclasses in the tree where no
  caller passes anything (:func:`stand_in`, guards.caught_instance): ``def f(s: Storage)`` holds a
  ``JSONStorage`` or a ``MemoryStorage``, never the abstract class whose ``read`` is ``...``;
* gives ``self`` of its methods no call reached those subclasses, not the class itself
  (seeds.seed_self), and no parameter is typed by attributes as one (seeds.seed_params).

The MRO is the one known so far: a subclass constructed before its abstract base resolves is
made (as before); what the class declares itself is known from the start (constants).

Kept here too, for want of a module that protocols.py may import without a cycle: ``"%s" % x``
calls ``str(x)``, ``%r`` ``repr(x)`` (:func:`percent_dunders`, the compiler's).
"""

from __future__ import annotations

import ast
import re
from typing import Any

PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")  # a %-conversion
ABSTRACT = "__abstractmethods__"
PROTOCOL = "<protocol>"  # no method name can be it
MAX_STAND_INS = 8  # concrete subclasses an annotation of an abstract class stands for
DECORATORS = {"abstractmethod", "abstractproperty", "abstractclassmethod", "abstractstaticmethod"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def abstract_attr(c: Any, node: ast.ClassDef) -> tuple[tuple[str, int], ...]:
    """The class attribute recording what ``node`` declares abstract (compile time), or ()."""
    names = [s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
             and any(_name(d) in DECORATORS for d in s.decorator_list)]
    if any(_name(b) == "Protocol" for b in node.bases):
        names.append(PROTOCOL)
    if not names:
        return ()
    var = c.var()
    for name in dict.fromkeys(names):
        c.emit("const", var, ("k", "str", name))
    return ((ABSTRACT, var),)


def declared(s: Any, k: int) -> set[str]:
    var = s.class_attrs[k].get(ABSTRACT)
    if var is None:
        return set()
    return {v[2] for v in tuple(s.pts.get(var, ())) if v[0] == "k" and v[1] == "str"}


def ancestors(s: Any, cid: int) -> dict[int, set[int]]:
    """``cid`` and its bases at every depth, each with its own ancestors, read off the bases' values
    now (not the MRO cache: a base's value may have arrived before its watcher redid the MRO).
    Iterative, with no closure calling itself: such a closure is a reference cycle holding ``out``,
    and the solver pauses the cyclic collector (build.solve_tree), so every call's dict lived to the
    end (sglang/srt: 256,000 sets, 48 MiB of the peak)."""
    out: dict[int, set[int]] = {}
    stack: list[tuple[int, int, bool]] = [(cid, 0, False)]
    while stack:  # depth-first; a class's set is folded once all its bases' are (post-order)
        k, depth, done = stack.pop()
        if done:
            for b in s.bases(k):
                out[k] |= out.get(b, {b})
            continue
        if k in out or depth > 60:  # reached before, or a cycle of bases: cut
            continue
        out[k] = {k}
        stack.append((k, depth, True))
        stack.extend((b, depth + 1, False) for b in s.bases(k))
    return out


def never_made(s: Any, cid: int) -> bool:
    """Whether class ``cid`` cannot be instantiated: a protocol, or a member some ancestor declares
    abstract that no class between them (a subclass of that ancestor among ``cid``'s) overrides."""
    if PROTOCOL in declared(s, cid):
        return True
    if ABSTRACT not in s.dunders:
        return False
    tree = ancestors(s, cid)
    for k in tree:
        for name in declared(s, k) - {PROTOCOL}:
            if not any(k in up and j != k and name in s.class_attrs[j] for j, up in tree.items()):
                return True
    return False


def unmade(s: Any, site: Any, cid: int) -> bool:
    """Whether construction of ``cid`` at ``site`` is not made now (calls.construct): the class is
    never instantiated, or a base of its MRO is not resolved yet (an abstract base would make it
    abstract): then it is made once that base resolves, or once the fixpoint is first reached (a
    base that never resolves: made then; waiting again each round kept such classes unmade and
    grew a watcher and a rule a round: sglang/srt 874 MiB, 648 edges lost)."""
    if never_made(s, cid):
        return True
    if ABSTRACT not in s.dunders:  # no class of the tree declares an abstract member
        return False
    waited = s.__dict__.setdefault("abstract_waited", set())  # (site, class): waited once, then made
    if (site.id, cid) in waited:
        return False
    pending = next((b for k in ancestors(s, cid) for b in s.class_bases[k] if not s.pts.get(b)), -1)
    if pending < 0:
        return False
    waited.add((site.id, cid))
    done = [False]

    def make(_: Any = ()) -> None:
        if not done[0]:
            done[0] = True
            s.construct(site, cid)
    s.on(pending, make)  # after base_changed: its watcher was installed first
    s.deferred.append((False, lambda: True, make))
    return True


def concrete_subclasses(s: Any, cid: int) -> list[int]:
    """The subclasses of ``cid`` known so far (all depths) that can be instantiated."""
    seen, stack = {cid}, [cid]
    while stack:
        for k in s.children.get(stack.pop(), ()):
            if k not in seen:
                seen.add(k)
                stack.append(k)
    return sorted(k for k in seen if k != cid and not never_made(s, k))


def stand_ins(s: Any, cid: int) -> list[int]:
    """The classes whose instances stand for one of ``cid``: itself, or its concrete subclasses (at
    most MAX_STAND_INS: more, itself as before; each is a copy of every method of it, clones.py)."""
    if not never_made(s, cid):
        return [cid]
    found = concrete_subclasses(s, cid)
    return found if len(found) <= MAX_STAND_INS else [cid]


def stand_in(s: Any, cid: int, dst: int) -> None:
    """An annotation (or handler) naming abstract ``cid``: its concrete subclasses' instances, where
    nothing else arrives once the fixpoint is first reached (neither ``dst`` nor the parameter it
    flows into holds a value: no caller passes one). Added always, 65 concrete configs stood for
    every ``quant_config: QuantizationConfig`` of sglang/srt beside what its callers pass (+8,800
    edges, +145 MiB); a caller's argument is the better witness of which subclass it is. More
    than ``MAX_STAND_INS`` of them (srt's 65 configs, stood for where no caller's value is known:
    +6,900 edges, +117 MiB): the abstract class's own instance, as before this rule."""
    def fallback() -> None:
        out = s.succ[dst]
        targets = () if out is None else (out,) if out.__class__ is int else out if out.__class__ is tuple else tuple(out[0])
        if not s.pts.get(dst) and not any(s.pts.get(t) for t in targets):
            found = concrete_subclasses(s, cid)  # many: the abstract class's own instance, as before
            s.add(dst, [s.V("i", k) for k in found] if len(found) <= MAX_STAND_INS else [s.V("i", cid)])
    s.deferred.append((False, lambda: True, fallback))


# kept here, not in typing_only.py (whose imports reach protocols.py, which calls it at compile time)
def percent_dunders(c: Any, scope: Any, node: ast.BinOp, right: int) -> None:
    """``"%s: %r" % (a, b)``: a's ``__str__``, b's ``__repr__`` (a tuple written there: each element
    at its place; one value: the only conversion; ``%(name)s`` mappings are not followed)."""
    text = node.left.value if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) else ""
    convs = [k for k in PERCENT.findall(text) if k != "%"]
    if right < 0 or "%(" in text:
        return
    if isinstance(node.right, ast.Tuple):
        places = [(i, k) for i, k in enumerate(convs) if k in "sra" and i < len(node.right.elts)]
    else:
        places = [(-1, convs[0])] if len(convs) == 1 and convs[0] in "sra" else []
    for i, k in places:
        var = right
        if i >= 0:
            var = c.var()
            c.emit("unpack", var, right, i)
        c.emit("dunder", -1, var, ("__str__", "__repr__") if k == "s" else ("__repr__",), (), scope.edge, node.lineno)


__all__ = ["ABSTRACT", "abstract_attr", "concrete_subclasses", "never_made", "percent_dunders", "stand_in", "stand_ins", "unmade"]
