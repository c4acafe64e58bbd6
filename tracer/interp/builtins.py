"""The builtins the interpreter knows (len, range, getattr, sorted, ...): pure on known values."""

from __future__ import annotations

from tracer.interp import budget
from tracer.interp.base import InterpreterCore
from tracer.interp.values import ABSENT, Obj, Unknown, is_unknown


class Builtins(InterpreterCore):
    """Mixin of the interpreter: ``builtin_<name>`` for each known builtin."""

    def builtin_len(self, node, args, kwargs):
        if args and isinstance(args[0], Obj):
            try:
                return args[0].attr("__len__")
            except KeyError:
                return self.unknown(node, f"length of {args[0].name} is not known")
        return self._pure(node, len, args, kwargs)

    def builtin_list(self, node, args, kwargs):
        if args:
            items = self.iterate(args[0], node)
            return items if is_unknown(items) else list(items)
        return []

    def builtin_tuple(self, node, args, kwargs):
        value = self.builtin_list(node, args, kwargs)
        return value if is_unknown(value) else tuple(value)

    def builtin_set(self, node, args, kwargs):
        return self._pure(node, set, args, kwargs)

    def builtin_sorted(self, node, args, kwargs):
        if "key" in kwargs:
            return self.unknown(node, "sorted with a key function")
        return self._pure(node, sorted, args, kwargs)

    def builtin_reversed(self, node, args, kwargs):
        return self._pure(node, lambda x: list(reversed(x)), args, kwargs)

    def builtin_min(self, node, args, kwargs):
        return self._pure(node, min, args, kwargs)

    def builtin_max(self, node, args, kwargs):
        return self._pure(node, max, args, kwargs)

    def builtin_sum(self, node, args, kwargs):
        items = args[0] if args else ()
        if isinstance(items, (list, tuple, set, frozenset, range)) and not all(
                isinstance(v, (int, float)) or is_unknown(v) for v in items):
            return self.unknown(node, "sum over values that are not numbers is not modelled")
        return self._pure(node, sum, args, kwargs)

    def builtin_abs(self, node, args, kwargs):
        return self._pure(node, abs, args, kwargs)

    def builtin_any(self, node, args, kwargs):
        return self._pure(node, any, args, kwargs)

    def builtin_all(self, node, args, kwargs):
        return self._pure(node, all, args, kwargs)

    def builtin_int(self, node, args, kwargs):
        return self._pure(node, int, args, kwargs)

    def builtin_float(self, node, args, kwargs):
        return self._pure(node, float, args, kwargs)

    def builtin_str(self, node, args, kwargs):
        return self._pure(node, str, args, kwargs)

    def builtin_bool(self, node, args, kwargs):
        if args and isinstance(args[0], Obj):
            return True
        return self._pure(node, bool, args, kwargs)

    def builtin_range(self, node, args, kwargs):
        value = self._pure(node, range, args, kwargs)
        too_big = budget.past(value) if isinstance(value, range) else None
        return value if too_big is None else self.unknown(node, too_big)

    def builtin_enumerate(self, node, args, kwargs):
        if not args:
            return self.unknown(node, "enumerate without arguments")
        items = self.iterate(args[0], node)
        if is_unknown(items):
            return items
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        if is_unknown(start):
            return Unknown(self.src(node), start.why)
        return [(start + n, item) for n, item in enumerate(items)]

    def builtin_islice(self, node, args, kwargs):
        """``itertools.islice(seq, stop)`` / ``islice(seq, start, stop[, step])`` over a known sequence."""
        if not args:
            return self.unknown(node, "islice without arguments")
        items = self.iterate(args[0], node)
        if is_unknown(items):
            return items
        bounds = list(args[1:])
        if any(is_unknown(b) for b in bounds) or not all(b is None or isinstance(b, int) for b in bounds):
            return self.unknown(node, "islice with unknown bounds")
        if len(bounds) == 1:
            return list(items)[: bounds[0]]
        return list(items)[slice(*bounds[:3])]

    def builtin_zip(self, node, args, kwargs):
        lists = [self.iterate(a, node) for a in args]
        for items in lists:
            if is_unknown(items):
                return items
        return [tuple(group) for group in zip(*lists, strict=False)]

    def builtin_isinstance(self, node, args, kwargs):
        return self.unknown(node, "isinstance is not modelled")

    def builtin_getattr(self, node, args, kwargs):
        if len(args) < 2 or is_unknown(args[1]) or not isinstance(args[1], str):
            return self.unknown(node, "getattr with an unknown name")
        obj, name = args[0], args[1]
        has_default = len(args) > 2
        default = args[2] if has_default else None
        obj_node = node.args[0].value
        if not self.root_is_local(obj_node):
            path = self.path_of(obj_node)
            if path is not None:
                found, value = self.lookup_path(f"{path}.{name}")
                if value is ABSENT:
                    return default if has_default else self.unknown(node, f"`{path}.{name}` does not exist")
                if found:
                    return value
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
            if has_default:
                return default
            return self.unknown(node, f"`{name}` is not in the bound config")
        if isinstance(obj, Obj):
            try:
                value = obj.attr(name)
            except KeyError:
                if obj.closed and has_default:
                    value = default
                else:
                    return self.unknown(node, f"attribute `{name}` of {obj.name} is not known")
            if self.observer is not None:
                self.observer.on_marker(self, name, value, node)
            return value
        if is_unknown(obj) and obj.path is not None:
            return Unknown(self.src(node), f"`{obj.path}.{name}` is not bound", f"{obj.path}.{name}")
        return self.unknown(node, "getattr on a value that is not bound")

    def builtin_hasattr(self, node, args, kwargs):
        if len(args) < 2 or not isinstance(args[1], str):
            return self.unknown(node, "hasattr with an unknown name")
        obj, name = args[0], args[1]
        obj_node = node.args[0].value
        if not self.root_is_local(obj_node):
            path = self.path_of(obj_node)
            if path is not None:
                found, value = self.lookup_path(f"{path}.{name}")
                if found:
                    return value is not ABSENT and not is_unknown(value)
        if isinstance(obj, Obj):
            if name in obj.methods or any(key == name for key, _ in obj.attrs):
                return True
            if obj.closed:
                return False
            return self.unknown(node, f"whether {obj.name} has `{name}` is not known")
        if isinstance(obj, dict) and name in obj:
            return True
        # A config class may define attributes that its config.json omits.
        return self.unknown(node, "hasattr is unknown unless the attribute is bound")

    def builtin_setattr(self, node, args, kwargs):
        if len(args) != 3 or not isinstance(args[1], str):
            return self.unknown(node, "setattr with an unknown name")
        obj_node = node.args[0].value
        path = self.path_of(obj_node)
        if path is None or self.root_is_local(obj_node):
            self.note(self.src(node), self.line(node), "setattr target could not be resolved")
            return None
        self.s.writes[f"{path}.{args[1]}"] = args[2]
        self.s.write_lines[f"{path}.{args[1]}"] = self.line(node)
        return None

    def builtin_print(self, node, args, kwargs):
        self.record_call(None, "print", args, kwargs, node)


