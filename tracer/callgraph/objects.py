"""Objects by allocation site (bounded object sensitivity): a rule of construction (calls.construct).

An instance is an abstract value keyed by its class, ``("i", cls)``: every object of a class
shares one set of fields. Where a class keeps per-object state in containers its ``__init__``
allocates on ``self`` (``self._data = {}``: a registry, a parser's rule list), that merge is
what makes every registry's items run in every registry's loop (markdown's ``util.Registry``
holding the preprocessors, the block processors, the inline patterns, ... as one set).

Here such a class's object is keyed by its class and the call site creating it,
``("i", cls, site)``, for the first ``MAX_OBJECTS`` sites of the class (the others share the
class's own ``("i", cls)``, as before); every rule reading an instance reads its class at
``v[1]``, so nothing else tells them apart but their fields, attribute reads, and bound methods.
The class's small methods are solved apart per receiver object (clones.receiver_scope: a copy
keyed by the object, at most ``MAX_OBJECT_CLONES`` per method), so the dict the ``__init__``
allocates is each object's own, and each ``register`` fills, and each ``__iter__`` reads, its
own object's dict. Counted: ``stats.objects_by_allocation_site``.

Only classes whose ``__init__`` (the one the MRO finds when the class is first created) is small
enough to be copied (clones.MAX_CLONE_INSTRS) and stores a container it allocates on ``self``
are kept apart: a large ``__init__`` is solved once for every receiver, and its objects would
only multiply values (the value budget cuts them) without keeping any state apart.
"""

from __future__ import annotations

import marshal
from typing import Any

Value = tuple[Any, ...]

MAX_OBJECTS = 8  # allocation sites of one class whose objects are kept apart
MAX_OBJECT_CLONES = 8  # receiver objects one method is solved apart for (beyond the class copies)


def instance_value(s: Any, site: Any, cid: int) -> Value:
    """The value a construction of class ``cid`` at ``site`` makes."""
    if not per_object(s, cid):
        return s.V("i", cid)
    key = (cid, site.id)
    found = s.object_sites.get(key)
    if found is None:
        count = s.object_count.get(cid, 0)
        if count >= MAX_OBJECTS:
            found = s.V("i", cid)
        else:
            s.object_count[cid] = count + 1
            found = s.V("i", cid, count + 1)
        s.object_sites[key] = found
    return found


def per_object(s: Any, cid: int) -> bool:
    """Whether ``cid``'s ``__init__`` (small, copyable) stores on ``self`` a container it allocates."""
    known = s.object_classes.get(cid)
    if known is not None:
        return known
    s.object_classes[cid] = False
    found = s.lookup(cid, "__init__")
    if found is None:
        return False
    inits = [f[1] for f in tuple(s.pts.get(found[1], ())) if f[0] == "f"]
    if len(inits) != 1 or inits[0] not in s.clone_code:
        return False
    uid = inits[0]
    scope = s.scopes[uid]
    if scope.method != "instance" or not scope.params or scope.params[0].kind not in ("pos", "posonly"):
        return False
    self_var = scope.params[0].var  # module-local, as the kept code is
    made: set[int] = set()
    for ins in marshal.loads(s.clone_code[uid].instrs):
        if ins[0] == "alloc":
            made.add(ins[1])
        elif ins[0] == "setattr" and ins[1] == self_var and ins[3] in made:
            s.object_classes[cid] = True
            return True
    return False


def object_field(s: Any, inst: Value, name: str, var: int) -> None:
    """A new field of an object: its class's own instance (a seeded receiver, a parameter typed by
    attributes, the sites beyond the cap: any object of the class) reads it too. What is written
    through that instance stays its own: written into every object, the containers its methods
    allocate (its seeded ``__init__``'s) would be every object's, and the objects one again."""
    s.edge(var, s.field(s.V("i", inst[1]), name))


def init_objects(s: Any) -> None:
    s.object_classes = {}  # class -> whether its objects are kept apart by allocation site
    s.object_sites = {}  # (class, site id) -> the value of the objects made there
    s.object_count = {}  # class -> objects kept apart
