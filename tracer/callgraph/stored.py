"""Callables a container or the standard library keeps and calls later (a mixin-free helper of
the solver: plain functions of it, hooked from calls.py, attrs.py and solve.py).

* ``functools.partial(fn, *a, **k)(*b, **l)`` is ``fn(*a, *b, **k, **l)`` (arguments and result) where,
  at the fixpoint, the site making the partial wraps at most ``MAX_PARTIAL_TARGETS`` functions (toolz's
  ``instanceproperty(classval=...)`` decorator); a site wrapping more (toolz's ``curry``: every curried
  function) gets the edge only: each call's arguments into every function it wraps, and all their
  results back, made every value reach everything.
* ``typing.cast(T, value)`` is ``value``; ``functools.update_wrapper(wrapper, f)`` is ``wrapper``.
* ``hasattr(obj, "name")`` reads the attribute (a property's getter, a ``__getattr__`` hook run);
  ``getattr(obj, name)`` with a name no constant gives runs the ``__getattr__`` hook of obj's class.
* ``collections.defaultdict(factory)``: reading a missing key calls ``factory()`` where the item is
  read (``d[k]`` in the source; ``d.get(k)`` does not); what it returns is an item of the dict.
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph import citers, dictlike, keyeq, ordering, regex
from tracer.callgraph.heap import Value
from tracer.callgraph.members import GETMEMBERS, dir_builtin, getmembers, vars_builtin
from tracer.callgraph.textio import CALLS as TEXTIO_CALLS
from tracer.callgraph.textio import TEXTIO, textio_call

DEFAULTDICT = "collections.defaultdict"
MAX_PARTIAL_TARGETS = 2  # functions one functools.partial(...) site may wrap and still bind arguments
CALLABLE = frozenset(("f", "b", "c", "sm", "cm", "i", "pa"))
# functions outside the tree that return one of their arguments: name -> (position, keyword)
RETURNS_ARG = {"typing.cast": (1, "val"), "typing_extensions.cast": (1, "val"),
               "functools.update_wrapper": (0, "wrapper")}
# names read off a module outside the tree that the solver follows (the rest stay the module's value)
KEPT_EXTERNAL = frozenset((DEFAULTDICT, TEXTIO, GETMEMBERS, *RETURNS_ARG, *regex.KEPT, *ordering.CALLED,
                           *dictlike.CALLED, *dictlike.KEPT, *citers.CALLED))
# what external_call answers: builtins and names outside the tree ("io.<method>": textio.py)
CALLED_EXTERNAL = frozenset((DEFAULTDICT, GETMEMBERS, *RETURNS_ARG, *(f"io.{m}" for m in TEXTIO_CALLS), *regex.CALLED,
                             *ordering.CALLED, *dictlike.CALLED, *citers.CALLED))


def init_stored(s: Any) -> None:
    s.default_factories = {}  # a defaultdict's container -> its factory's var
    s.factory_sites = set()  # (container, scope, line) where a factory was called
    s.textio_done = set()  # (scope, line, method, instance) of TextIOWrapper methods run (textio.py)
    s.external_attrs = {}  # (module outside the tree, name) the tree sets -> the var of what it sets
    s.external_readers = {}  # the same, read before any set: the readers' vars
    s.raised_classes = set()  # classes of the tree a raise statement raises (raised.py)
    s.handlers = []  # (E, e's var) of each ``except E as e`` (raised.py)
    s.reduced = set()  # (scope, line) of the functools.reduce calls made
    s.lazy_iters, s.lazy_done = {}, set()  # itertools' lazy iterators, (iterator, consumer) pulled (citers.py)


def external_call(s: Any, site: Any, v: Value) -> None:
    """A call of one of the builtins or names outside the tree this module follows."""
    name = v[1]
    if name == DEFAULTDICT:
        defaultdict_made(s, site)
    elif name == GETMEMBERS:
        getmembers(s, site)
    elif name in RETURNS_ARG:
        s.edge(s.arg(site, *RETURNS_ARG[name]), site.dst)
    elif name in regex.CALLED:  # re.sub(p, fn, s), re.compile(p).sub(fn, s): fn(match) (regex.py)
        regex.regex_call(s, site, name)
    elif name in citers.CALLED:  # itertools.islice(it, n), takewhile(pred, it): it pulled, pred called (citers.py)
        citers.itertools_call(s, site, name)
    elif name in ordering.CALLED:  # heapq.heappush(h, x), bisect.insort(a, x): elements compared (ordering.py)
        ordering.external_sort(s, site, name)
    elif name in dictlike.CALLED:  # operator.length_hint(x): x's __len__ (dictlike.py)
        dictlike.length_hinted(s, site)
    else:  # ("x", "io.<method>", instance): a TextIOWrapper method on an instance of a subclass
        textio_call(s, site, name[3:], v[2])


def defaultdict_made(s: Any, site: Any) -> None:
    """``collections.defaultdict(factory, ...)``: a dict whose missing items ``factory`` makes."""
    oid = ("call", site.id)
    obj = s.new_obj(oid, "dict")
    factory = s.arg(site, 0)
    if factory >= 0:
        s.default_factories[oid] = factory
    source = s.arg(site, 1)
    if source >= 0:  # defaultdict(list, {...}): the mapping's items are its items
        s.each(source, lambda v: s.merge_obj(oid, v[1]), "o")
    for key, var in site.kwargs:
        if key is not None:
            s.write(oid, s.V("k", "str", key), var)
    if site.dst >= 0:
        s.add(site.dst, (obj,))


def missing_item(s: Any, v: Value, caller: int, line: int) -> None:
    """``d[k]`` on a defaultdict, read where ``caller`` reads it: the factory runs there (once per
    reading site), its result stored under every key."""
    key = (v[1], caller, line)
    if key in s.factory_sites or v[1] not in s.default_factories:
        return
    s.factory_sites.add(key)
    made = s.new_var()
    s.write(v[1], None, made)
    s.call_on(s.default_factories[v[1]], s.site(made, (), caller, line, "callback"))


def attribute_probe(s: Any, site: Any) -> None:
    """``hasattr(obj, name)``: the attribute is read (the result is a bool)."""
    target, attr = s.arg(site, 0), s.arg(site, 1)
    if target >= 0 and attr >= 0:
        s.each(attr, lambda k: s.attr_instr(s.new_var(), target, k[2], site.caller, site.line), "k")


def unknown_name_read(s: Any, site: Any) -> None:
    """``getattr(obj, name)`` where name holds no string constant (a hook's own parameter, a name
    from the input): a class of obj with ``__getattr__`` may be asked for it."""
    target, attr = s.arg(site, 0), s.arg(site, 1)
    if target < 0 or attr < 0:
        return
    hook = s.site(site.dst, (), site.caller, site.line, "implicit")
    s.deferred.append((True, lambda: not any(v[0] in "kn" for v in s.pts.get(attr, ())),
                       lambda: s.on(target, ("i", lambda inst: s.instance_getattr(inst, hook)))))


def external_write(s: Any, v: Value, name: str, src: int) -> None:
    """``sys.stdin = wrapper``: an attribute of a module outside the tree set by the tree; every
    read of that name off that module (before or after, in any module) sees what was set."""
    key = (v[1], name)
    var = s.external_attrs.get(key)
    if var is None:
        var = s.external_attrs[key] = s.new_var()
        for dst in s.external_readers.pop(key, ()):
            s.edge(var, dst)
    s.edge(src, var)


def external_read(s: Any, v: Value, name: str, dst: int) -> None:
    key = (v[1], name)
    var = s.external_attrs.get(key)
    if var is not None:
        s.edge(var, dst)
    else:
        s.external_readers.setdefault(key, []).append(dst)


def no_hook(s: Any, site: Any) -> None:
    pass


BUILTIN_HOOKS = {"getattr": unknown_name_read, "hasattr": attribute_probe,  # run first by Calls.builtin
                 "sorted": ordering.sort_builtin, "min": ordering.sort_builtin, "max": ordering.max_builtin,
                 "dir": dir_builtin, "vars": vars_builtin,  # x's attribute names (members.py)
                 "hash": keyeq.hash_builtin,  # a tuple's elements hashed too (keyeq.py)
                 **dictlike.BUILTIN_HOOKS}  # list(x): x's __len__; sorted(xs): both (dictlike.py)


def partial_call(s: Any, made: Any, site: Any) -> None:
    """``p(*b, **l)`` of ``p = functools.partial(fn, *a, **k)`` made at ``made``: the edge now; the
    arguments and the result once a fixpoint shows the site wraps few functions (what a site making
    partials of a parameter wraps is only known at the end: toolz's curry wraps all of them)."""
    fn = made.args[0][0]
    s.call_on(fn, s.site(-1, (), site.caller, site.line, "callback"))
    full = s.site(site.dst, (*made.args[1:], *site.args), site.caller, site.line, "callback",
                  (*made.kwargs, *site.kwargs))

    def few() -> bool:
        return sum(1 for v in s.pts.get(fn, ()) if v[0] in CALLABLE) <= MAX_PARTIAL_TARGETS
    s.deferred.append((True, few, lambda: s.call_values(full, [v for v in s.pts.get(fn, ()) if v[0] in CALLABLE])))


def reduce_once(s: Any, site: Any) -> None:
    """``functools.reduce`` once per calling line: a reduce handed to itself (through a partial or a
    curried function) would otherwise call itself forever, a new synthetic site each time."""
    key = (site.caller, site.line, site.dst)
    if key not in s.reduced:
        s.reduced.add(key)
        citers.reduce(s, site)
