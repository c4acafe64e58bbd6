"""The inherited methods of a class only the outside creates: a rule of ``self`` seeding (seeds.py).

``self`` of a method no call reached is an instance of the classes the program creates that have
it in their MRO, or, when the program creates none of them, of its own class: the class is built
outside the tree (a framework's loader picks a model class from a registry, a user subclasses a
base). Such a class's instance is then the receiver of every method it has, not only of its own
unreached ones: the loader calls ``forward``, which a subclass inherits from a base whose
``forward`` another receiver reached. Without this, ``DecoderModelForCausalLM.forward`` (reached
for no model class) never read ``self.model`` off ``MixtralForCausalLM``, whose ``__init__`` stores
it; the edge was found only while one shared ``__init__`` gave the base's abstract instance every
subclass's model (an impossible value the per-receiver copies of clones.py took away).

A method is given the instance only where the class's MRO binds its name to that method (an
override is no receiver of the method it overrides, but through ``super()``, which the solve sees).
"""

from __future__ import annotations

from typing import Any


def seed_inherited(solver: Any, outside: set[int], unreached: set[int]) -> None:
    """``self`` of each instance method the classes in ``outside`` inherit holds their instance
    (their copy's ``self`` for a method solved apart per receiver class)."""
    for k in sorted(outside):
        inst = solver.V("i", k)
        for c in solver.mro(k)[1:]:
            for name, var in solver.class_attrs[c].items():
                found = solver.lookup(k, name)
                if found is None or found[0] != c:
                    continue
                for f in tuple(solver.pts.get(var, ())):
                    if f[0] != "f" or solver.scopes[f[1]].method != "instance" or not solver.scopes[f[1]].params:
                        continue
                    if f[1] not in unreached and name not in solver.module_calls:
                        continue
                    uid = solver.receiver_scope(f[1], inst, None) if f[1] in solver.clone_code else f[1]
                    first = solver.scopes[uid].params[0]
                    if first.kind in ("pos", "posonly"):
                        solver.add(first.var + solver.scope_base[uid], (inst,))
                        solver.inherited_seeded += 1
