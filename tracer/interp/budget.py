"""The interpreter's size budget: every value it builds from scanned code is bounded.

A setter or config can ask for anything (``sum(range(10**12))``, ``7 ** 3000000000``,
``"ab".join(["c"] * 10**8)``); Python's builtins run such requests in C, holding the
GIL, so not even a signal handler runs until they end. So the interpreter predicts the
size of a result before it computes it, and a value past the budget is Unknown (explain
names the expression and says why), never built.

- one value: at most ``MAX_UNITS`` units, counted through nested lists, tuples, sets and
  dicts (an item is one unit, a string of n characters ``1 + n // CHARS_PER_UNIT``);
- an integer: at most ``MAX_INT_BITS`` bits (layer ids need a dozen);
- one evaluation: at most ``MAX_WORK`` units built or walked in all (with the step limit
  this bounds its time: a few seconds at worst).
"""

from __future__ import annotations

import re
from typing import Any

MAX_UNITS = 100_000  # items of one value (a million characters of a string)
CHARS_PER_UNIT = 10
MAX_INT_BITS = 4096
MAX_WORK = 2_000_000
MAX_FUNCTION_SOURCE = 64 * 1024  # characters of one function the interpreter parses (libcst: ~4 s for 64 KiB)
MAX_RANGE = MAX_UNITS  # a range longer than this is past the budget (iterated, listed or summed)


class PastBudget(Exception):
    """A value (or the work of one evaluation) past the budget; ``str()`` says which."""


def units(value: Any, cap: int = MAX_UNITS) -> int:
    """The value's size in units, counted through nested containers (a shared or cyclic
    part counts each time it is reached); counting stops past ``cap`` (so this costs at
    most ``cap`` steps): the result is then ``cap + 1``."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        total += 1
        if total > cap:
            return cap + 1
        if isinstance(item, str):
            total += len(item) // CHARS_PER_UNIT
        elif isinstance(item, int) and not isinstance(item, bool):
            total += item.bit_length() // 64
        elif isinstance(item, (list, tuple, set, frozenset)):
            if len(item) > cap:
                return cap + 1
            stack.extend(item)
        elif isinstance(item, dict):
            if len(item) > cap:
                return cap + 1
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, range):
            total += 1 if range_length(item) <= MAX_RANGE else cap
    return min(total, cap + 1)


def range_length(value: range) -> int:
    try:
        return len(value)
    except OverflowError:  # more items than a machine word counts
        return MAX_WORK * MAX_UNITS


def int_bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def _bits_of_result(name: str, left: int, right: int) -> int | None:
    """An upper bound of the bits of ``left <op> right`` for ints; None: not predictable."""
    a, b = int_bits(left), int_bits(right)
    if name in ("add", "sub", "or_", "xor", "and_"):
        return max(a, b) + 1
    if name == "mul":
        return a + b
    if name == "lshift":
        return a + right if right >= 0 else a
    if name == "pow":
        if right < 0 or abs(left) <= 1:
            return 1  # a float, 0 or ±1
        return a * right
    return max(a, b)  # floordiv, mod, truediv, rshift: never bigger than an operand


_SPEC_NUMBER = re.compile(r"\d{5,}|\*")  # a width or precision of 10,000 or more, or taken from an argument


def check_binary(name: str, left: Any, right: Any) -> str | None:
    """Why ``left <op> right`` would build a value past the budget; None when it fits."""
    if isinstance(left, int) and isinstance(right, int) and not isinstance(left, bool) | isinstance(right, bool):
        bits = _bits_of_result(name, left, right)
        if bits is not None and bits > MAX_INT_BITS:
            return f"an integer of about {bits:,} bits, past the interpreter's budget of {MAX_INT_BITS:,}"
        return None
    if name == "mul":
        sequence, count = (left, right) if isinstance(right, int) else (right, left)
        if isinstance(sequence, (str, list, tuple)) and isinstance(count, int) and count > 1:
            if isinstance(sequence, str):
                size = 1 + len(sequence) * count // CHARS_PER_UNIT
            else:
                size = 1 + (units(sequence) - 1) * count if len(sequence) else 0
            if size > MAX_UNITS:
                return f"a {type(sequence).__name__} of {len(sequence) * count:,} items, past the interpreter's budget"
        return None
    if name == "add" and isinstance(left, (str, list, tuple)) and isinstance(right, type(left)):
        if units(left) + units(right) > MAX_UNITS:
            return "a value past the interpreter's budget"
        return None
    if name == "mod" and isinstance(left, str):
        specs = re.findall(r"%[^a-zA-Z%]*", left)
        if any(_SPEC_NUMBER.search(spec) for spec in specs):
            return "a %-format with a width or precision past the interpreter's budget"
        if units(left) * max(1, len(specs)) > MAX_UNITS or units(right) * max(1, len(specs)) > MAX_UNITS:
            return "a %-format result past the interpreter's budget"
    return None


def check_format(template: str, args: list, kwargs: dict) -> str | None:
    """Why ``template.format(...)`` would build a string past the budget."""
    plain = template.replace("{{", "").replace("}}", "")
    fields = re.findall(r"\{[^}]*\}?", plain)
    if any("{" in field[1:] for field in fields):
        return "a format with nested fields is not modelled"
    if any(_SPEC_NUMBER.search(field.partition(":")[2]) for field in fields):
        return "a format with a width or precision past the interpreter's budget"
    largest = max([units(v) for v in list(args) + list(kwargs.values())] or [0])
    if len(fields) * largest + units(template) > MAX_UNITS:
        return "a format result past the interpreter's budget"
    return None


def check_join(separator: str, items: Any) -> str | None:
    if not isinstance(items, (list, tuple)):
        return None
    size = units(separator) * len(items) + units(items)
    if size > MAX_UNITS:
        return f"joining {len(items):,} items would build a string past the interpreter's budget"
    return None


def check_replace(receiver: str, args: list) -> str | None:
    if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        count = receiver.count(args[0]) if args[0] else len(receiver) + 1
        if len(receiver) + count * max(0, len(args[1]) - len(args[0])) > MAX_UNITS * CHARS_PER_UNIT:
            return "the replacement would build a string past the interpreter's budget"
    return None


def check_method(receiver: Any, method: str, args: list, kwargs: dict) -> str | None:
    """Why ``receiver.method(...)`` (a plain value's method) would build a value past the
    budget, predicted before it runs: ``"ab".join(["c"] * 10**8)`` must never start."""
    if isinstance(receiver, str):
        if method == "join" and args:
            return check_join(receiver, args[0])
        if method == "replace":
            return check_replace(receiver, args)
        if method == "format":
            return check_format(receiver, args, kwargs)
        return None
    if isinstance(receiver, list) and method in ("append", "extend", "insert"):
        added = sum(units(a) for a in args)
        if len(receiver) + added > MAX_UNITS:
            return f"a list past the interpreter's budget of {MAX_UNITS:,} items"
    return None


def past(value: Any) -> str | None:
    """Why a value is past the budget (a range too long to list, a value too big); None when it fits."""
    if isinstance(value, range):
        if range_length(value) > MAX_RANGE:
            return f"a range of {range_length(value):,} items, past the interpreter's budget of {MAX_RANGE:,}"
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        return f"an integer of {value.bit_length():,} bits, past the interpreter's budget of {MAX_INT_BITS:,}"
    if units(value) > MAX_UNITS:
        return f"a value of more than {MAX_UNITS:,} items, past the interpreter's budget"
    return None


def trim(value: Any, why_prefix: str = "", depth: int = 0) -> Any:
    """A bound value (a config, an argument) with every part past the budget made Unknown,
    so that one oversized list in a config costs its own key, not the whole config."""
    from tracer.interp.values import Unknown

    if depth > 64:
        return Unknown(why_prefix or "value", "nests deeper than the interpreter follows")
    if isinstance(value, dict):
        if len(value) > MAX_UNITS:
            return Unknown(why_prefix or "value", f"a mapping of {len(value):,} keys, past the interpreter's budget")
        return {key: trim(item, f"{why_prefix}.{key}" if why_prefix else str(key), depth + 1)
                for key, item in value.items()}
    why = past(value)
    if why is not None:
        return Unknown(why_prefix or "value", why)
    return value
