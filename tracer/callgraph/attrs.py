"""Attribute reads and writes (``obj.name``, ``obj.name = x``): a mixin of the solver.

A read of ``name`` off an instance, a class or a ``super()`` object is resolved once per
(value, name), into one shared variable every reading site is linked to: on sglang/srt
the same ``self.config`` is read thousands of times, and a subscription (two closures
and a property-getter closure) per read was a million closures, most of the memory
the fixpoint took. A property found for a shared read runs once, with the shared
variable as its result; every site reading it gets its own ``implicit`` edge.
"""

from __future__ import annotations

from typing import Any

from tracer.callgraph.calls import Calls
from tracer.callgraph.dictlike import mixin_attr
from tracer.callgraph.heap import CONTAINER_METHODS, Value
from tracer.callgraph.members import SYS_MODULES, dunder_dict, sys_modules
from tracer.callgraph.prefixes import func_attr_set
from tracer.callgraph.protocols import STR_CASES, STR_SPLITS
from tracer.callgraph.regex import pattern_attr
from tracer.callgraph.stored import KEPT_EXTERNAL, external_read, external_write
from tracer.callgraph.textio import CALLS as TEXTIO_CALLS
from tracer.callgraph.textio import textio_attr
from tracer.callgraph.typing_only import getattr_unless_set


class Attrs(Calls):
    dunders: set[str]
    entry_seeds: dict[str, str]
    unbudgeted: set[int]
    modules: set[str]
    ns: dict[tuple[str, str], int]

    def init_attrs(self) -> None:
        self.attr_vars: dict[tuple[Value, str], int] = {}  # (receiver value, name) -> the shared read
        self.attr_readers: dict[int, Any] = {}  # shared read -> the scope reading it, or a list of them
        self.attr_getters: dict[int, list[int]] = {}  # shared read -> the property getters it ran
        self.caching_hooks: set[int] = set()  # classes whose __getattr__ setattr()s what it is asked (hooks.py)

    def attr_value(self, v: Value, name: str, dst: int, caller: int, line: int) -> None:
        t = v[0]
        if name == "__dict__" and t in ("c", "m"):  # a namespace as a dict of names (members.py)
            dunder_dict(self, v, dst, caller, line)
            return
        if t in ("i", "c", "s"):
            if t == "i" and name == "__class__":
                self.add(dst, (self.V("c", v[1]),))
                return
            shared = self.attr_vars.get((v, name))
            if shared is None:
                shared = self.shared_attr(v, name, caller)
            elif t != "c":
                readers = self.attr_readers[shared]  # one reader alone (most), then a list
                if (readers if readers.__class__ is int else readers[-1]) != caller:
                    if readers.__class__ is int:
                        self.attr_readers[shared] = [readers, caller]
                    else:
                        readers.append(caller)
                    for uid in self.attr_getters.get(shared, ()):
                        self.add_edge(self.site(-1, (), caller, line, "implicit"), uid)
            self.edge(shared, dst)
        elif t == "m":
            self.module_attr(v[1], name, dst)
            if self.export(v[1], name) < 0 and f"{v[1]}.{name}" not in self.modules:
                self.module_getattr(v[1], name, dst, caller, line)
        elif t == "B" and v[1] == "object" and name == "__getattribute__":
            self.add(dst, (self.V("B", "getattr"),))  # object.__getattribute__(obj, name): getattr's lookup
        elif t == "B" and v[1] == "property" and name in ("__init__", "__get__"):
            self.add(dst, (self.V("B", f"property.{name}"),))  # a property subclass calling its base
        elif t == "x" and (v[1], name) in (("functools", "partial"), ("types", "MethodType"), ("importlib", "import_module")):
            self.add(dst, (self.V("x", f"{v[1]}.{name}"),))
        elif t == "x" and f"{v[1]}.{name}" == SYS_MODULES:  # a dict of the tree's modules by name
            sys_modules(self, dst)
        elif t == "x" and f"{v[1]}.{name}" in KEPT_EXTERNAL:
            self.add(dst, (self.V("x", f"{v[1]}.{name}"),))
        elif t == "x" and pattern_attr(self, v, name, dst):
            pass  # re.compile(p).sub: the pattern's method (regex.py)
        elif t == "x":
            # something outside the tree: its attributes are outside too, and the imported name is
            # all that is kept (torch.nn.Module is torch.nn's); dotted names grown from every external
            # value a variable holds were millions of values on sglang/srt and nothing used them
            self.add(dst, (v,))
            external_read(self, v, name, dst)
        elif t == "o" and name in CONTAINER_METHODS:
            self.add(dst, (self.V("bm", name, v),))
        elif t == "k" and (name in STR_CASES and v[1] in ("str", "prefix") or name in STR_SPLITS and v[1] == "str"):
            self.add(dst, (self.V("bm", name, v),))
        elif t == "p" and name in ("setter", "getter", "deleter"):
            self.add(dst, (self.V("bm", name, v),))

    def shared_attr(self, v: Value, name: str, caller: int) -> int:
        """The new variable of ``v.name`` for every site reading it (``caller``: the first): the
        instance's field, the class attribute the MRO finds (bound to ``v``), what a property
        getter returns."""
        var = self.attr_vars[(v, name)] = self.new_var()
        self.attr_readers[var] = caller  # before the lookup: a getter found at once has its first reader
        if name in self.entry_seeds:
            self.unbudgeted.add(var)
        t = v[0]
        if t == "i":
            self.edge(self.field(v, name), var)
            recv, on_instance, after = v, True, -1
        elif t == "c":
            recv, on_instance, after = v, False, -1
        else:  # super(): the MRO of the receiver's class, after the class super() names
            recv, on_instance, after = v[2], v[2][0] == "i", v[1]
        self.subscribe(recv[1], name, (Attrs.attr_found, var, recv, on_instance), after=after)
        if name in TEXTIO_CALLS and t != "c":
            textio_attr(self, v, name, var)
        if t == "i":  # m.get of a Mapping subclass not defining it: the mixin (dictlike.py)
            mixin_attr(self, v, name, var)
        if t == "i" and not name.startswith("__") and self.lookup(v[1], "__getattr__") is not None:
            # normal lookup failed (the read holds nothing): the class's __getattr__ runs with the name
            # (the name is not passed: a hook setting what it is asked for would make the read
            # found, after the edge was drawn)
            site = self.site(var, (), caller, 0, "implicit")
            self.when_empty(var, (getattr_unless_set, v, site, name), late=True)  # typing_only.py
        return var

    def readers_of(self, shared: int) -> Any:
        """The scopes reading a shared attribute variable, first first."""
        readers = self.attr_readers.get(shared, ())
        return (readers,) if readers.__class__ is int else readers

    def const_var(self, name: str) -> int:
        var = self.new_var()
        self.add(var, (self.V("k", "str", name),))
        return var

    def instance_getattr(self, inst: Value, site: Any) -> None:
        if any(c in self.dynamic_fields for c in self.mro(inst[1])):
            return  # setattr(self, name, ...) with an unknown name may have made the attribute: no proof it fails
        if any(c in self.caching_hooks for c in self.mro(inst[1])):
            # a hook caching its answer runs at the first read of a name only: the import-time reads
            # (module bodies) when there are some, they run before any function can; the value read
            # is the hook's everywhere
            first = [c for c in dict.fromkeys(self.readers_of(site.dst)) if self.scopes[c].kind == "module"]
            for i, caller in enumerate(first):
                self.subscribe(inst[1], "__getattr__", self.method_caller(
                    site._replace(caller=caller) if i == 0 else self.site(-1, (), caller, 0, "implicit"), inst))
            if first:
                return
        self.subscribe(inst[1], "__getattr__", self.method_caller(site, inst))

    def module_getattr(self, module: str, name: str, dst: int, caller: int, line: int) -> None:
        """PEP 562: a name a module does not bind is asked of its ``__getattr__``."""
        hook = self.export(module, "__getattr__")
        if hook >= 0:
            self.call_on(hook, self.site(dst, ((self.const_var(name), False),), caller, line, "implicit"))

    def attr_found(self, owner: int, found: int, var: int, recv: Value, on_instance: bool) -> None:
        """The MRO found the class attribute (in ``owner``, values in ``found``) a shared read is of."""
        self.on(found, ("", Attrs.bind_into, var, recv, on_instance))

    def bind_into(self, v: Value, var: int, recv: Value, on_instance: bool) -> None:
        if v[0] == "i" and "__get__" in self.dunders and self.lookup(v[1], "__get__") is not None:
            self.descriptor_get(var, v, recv)  # a descriptor: what its __get__ returns is the value read
            return
        getter = self.getter(var, recv) if on_instance and v[0] == "p" else None
        self.add(var, self.bound_values((v,), recv, recv[1], on_instance, getter))

    def getter(self, shared: int, recv: Value) -> Any:
        def run_getter(uid: int) -> None:
            getters = self.attr_getters.setdefault(shared, [])
            if uid in getters:
                return
            getters.append(uid)
            for i, caller in enumerate(dict.fromkeys(self.readers_of(shared))):
                site = self.site(shared, (), caller, 0, "implicit")
                if i == 0:
                    self.invoke(site, uid, recv)  # the getter runs once: its result is the shared read's
                else:
                    self.add_edge(site, uid)
        return run_getter

    def descriptor_get(self, shared: int, desc: Value, recv: Value) -> None:
        """``obj.name`` where the class attribute is an instance of a class with ``__get__`` (the
        tree's own descriptor): ``__get__(desc, obj, type(obj))`` runs once for the shared read
        (``obj`` None when read off the class), every reading site gets its ``implicit`` edge."""
        obj, owner = self.new_var(), self.new_var()
        self.add(obj, (recv,) if recv[0] == "i" else (self.V("k", "NoneType", None),))
        self.add(owner, (self.V("c", recv[1]),))

        def run(found: int, fvar: int) -> None:
            def each(f: Value) -> None:
                if f[0] != "f":
                    return
                getters = self.attr_getters.setdefault(shared, [])
                if f[1] in getters:
                    return
                getters.append(f[1])
                for i, caller in enumerate(dict.fromkeys(self.readers_of(shared))):
                    site = self.site(shared, ((obj, False), (owner, False)), caller, 0, "implicit")
                    if i == 0:
                        self.invoke(site, f[1], desc)
                    else:
                        self.add_edge(site, f[1])
            self.each(fvar, each)
        self.subscribe(desc[1], "__get__", run)

    def setattr_instr(self, obj: int, name: str, src: int, caller: int, line: int) -> None:
        self.on(obj, ("", Attrs.setattr_value, name, src, caller, line))
        self.note_setattr(obj, name, caller)

    def note_setattr(self, obj: int, name: str, caller: int = -1) -> None: ...

    def setter_found(self, owner: int, var: int, src: int, caller: int, line: int, v: Value) -> None:
        """The class attribute a write to an instance finds: a property's setter runs."""
        site = self.site(-1, ((src, False),), caller, line, "implicit")
        self.each(var, lambda p: self.invoke(site, p[2], v) if p[2] >= 0 else None, "p")

    def setattr_value(self, v: Value, name: str, src: int, caller: int, line: int) -> None:
        t = v[0]
        if t == "i":
            cid = v[1]
            self.edge(src, self.field(v, name))
            self.subscribe(cid, name, (Attrs.setter_found, src, caller, line, v))  # data, not a closure a write
        elif t == "c":
            self.edge(src, self.class_attr_var(v[1], name))
        elif t == "x":
            external_write(self, v, name, src)
        elif t in ("f", "b"):  # rule_func._params = params: hasattr(rule_func, "_params") (prefixes.py)
            func_attr_set(self, v, name)
        elif t == "m" and v[1] in self.modules:
            var = self.ns.get((v[1], name))
            if var is None:
                var = self.ns[(v[1], name)] = self.new_var()
            self.edge(src, var)

