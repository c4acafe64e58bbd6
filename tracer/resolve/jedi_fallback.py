"""jedi for the hops the resolver cannot type itself, under a time budget.

jedi reads source; it is set up so that nothing of the scanned tree can run:
an in-process environment (no subprocess of another interpreter), no
project sys.path guessing, and no loading of compiled extensions found in the
project (``load_unsafe_extensions=False``). Each answer is checked against the
tree (it must name a class defined there), else it is ignored.
"""

from __future__ import annotations

import time
from pathlib import Path

DEFAULT_BUDGET_S = 0.5  # total jedi time per scan (checked before each call; an answer is cached)


class JediFallback:
    def __init__(self, base: Path, budget_s: float = DEFAULT_BUDGET_S):
        self.base = base
        self.budget_s = budget_s
        self.spent_s = 0.0
        self.calls = 0
        self._project = None
        self._environment = None
        self._failed = False
        self.calls_made_answer = False

    def _setup(self) -> bool:
        if self._project is not None or self._failed:
            return not self._failed
        try:
            import jedi

            # jedi __import__s "auto import" modules and any module it finds only as
            # a compiled file, from the process's sys.path: that path may hold the
            # scanned tree (`python -m tracer` run inside it puts the cwd first), so
            # nothing there may be importable, and nothing is auto-imported.
            jedi.settings.auto_import_modules = []
            # No search of the tree's files for a function's callers (jedi's "dynamic
            # params"): on SGLang 0.5.23 it read 400 files for one question, 0.4 s.
            jedi.settings.dynamic_params = False
            jedi.settings.dynamic_params_for_other_modules = False
            self._environment = jedi.InterpreterEnvironment()
            self._project = jedi.Project(
                path=str(self.base), added_sys_path=(), smart_sys_path=False, load_unsafe_extensions=False,
                sys_path=_safe_sys_path(self.base),
            )
        except Exception:  # jedi missing or broken: the fallback is simply off
            self._failed = True
        return not self._failed

    def infer_attribute(self, source: str, path: str, line: int, column: int) -> list[str]:
        """Fully qualified names of the classes jedi infers at (line, column)."""
        self.calls_made_answer = False
        if self.spent_s >= self.budget_s:
            # Out of budget: remembered as no answer, so that a warm run gives the cold
            # run's result (and spends nothing) instead of asking again each time.
            self.calls_made_answer = True
            return []
        if not self._setup():
            return []  # jedi unusable here: not an answer, so not cached
        import jedi

        started = time.perf_counter()
        try:
            script = jedi.Script(code=source, path=path, project=self._project, environment=self._environment)
            names = script.infer(line, column)
            found = [n.full_name for n in names if n.full_name and n.type in ("instance", "class")]
            self.calls_made_answer = True
        except Exception:
            found = []
        finally:
            self.calls += 1
            self.spent_s += time.perf_counter() - started
        return found


def _safe_sys_path(base: Path) -> list[str]:
    """The interpreter's sys.path without the current folder, without any entry
    inside, or above, the scanned tree (from which a module could be imported), and
    without third-party packages."""
    import os
    import sys

    root = os.path.realpath(base)
    cwd = os.path.realpath(os.getcwd())
    safe = []
    for entry in sys.path:
        if not entry:
            continue
        real = os.path.realpath(entry)
        if real == cwd or real == root or real.startswith(root + os.sep) or root.startswith(real.rstrip(os.sep) + os.sep):
            continue
        if os.path.basename(real.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            # third-party packages (torch...) can hold no class of the tree, which is all an
            # answer may name; reading torch's sources cost 4 s of a 5 s cold scan
            continue
        safe.append(entry)
    return safe
