"""``setattr(self, name, v)`` with a name no one knows, in a method: a function of the solver (``s``).

In most methods it may make any attribute, so a read the class does not define may be found
and is no proof that ``__getattr__`` runs (``dynamic_fields``). In ``__getattr__`` itself it
caches the hook's answer (sqlparse's token types: ``T.Keyword`` is made on first read): the read
holds what the hook returns, now or later, and no other attribute appears; the hook runs at the
first read of each name (``caching_hooks``, used by ``Attrs.instance_getattr``)."""

from __future__ import annotations

from typing import Any


def setattr_unknown(s: Any, cid: int, caller: int, attr: int) -> None:
    if s.scopes[caller].name.endswith(".__getattr__"):
        s.caching_hooks.add(cid)
    else:
        s.when_empty(attr, (type(s).dynamic_setattr, cid))
