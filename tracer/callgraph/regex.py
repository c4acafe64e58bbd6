"""The standard library's ``re`` calling back into the program: ``re.sub(pattern, repl, s)`` and
``re.compile(p).sub(repl, s)`` (``subn`` too) call ``repl(match)`` for every match when repl is a
function (a string repl is no call). ``re.compile`` returns a pattern (``("x", "re.Pattern")``),
whose ``sub``/``subn`` are followed wherever the pattern is kept (a module constant, a field).
What the callback returns and the match it gets stay unknown. Plain functions of the solver,
hooked from stored.py (the calls) and attrs.py (the pattern's methods)."""

from __future__ import annotations

from typing import Any

from tracer.callgraph.heap import Value

PATTERN = "re.Pattern"
SUBS = ("sub", "subn")
# names read off the module ``re`` that are followed (the rest stay the module's value)
KEPT = frozenset(("re.compile", *(f"re.{m}" for m in SUBS)))
# what regex_call answers
CALLED = frozenset((*KEPT, *(f"{PATTERN}.{m}" for m in SUBS)))


def pattern_attr(s: Any, v: Value, name: str, dst: int) -> bool:
    """``pattern.sub``: the pattern's method (True when it is one this module follows)."""
    if v[1] != PATTERN or name not in SUBS:
        return False
    s.add(dst, (s.V("x", f"{PATTERN}.{name}"),))
    return True


def regex_call(s: Any, site: Any, name: str) -> None:
    if name == "re.compile":
        if site.dst >= 0:
            s.add(site.dst, (s.V("x", PATTERN),))
        return
    # re.sub(pattern, repl, string) / pattern.sub(repl, string): repl(match) for each match
    repl = s.arg(site, 0 if name.startswith(PATTERN) else 1, "repl")
    s.callback(site, repl, (s.new_var(),), -1)
