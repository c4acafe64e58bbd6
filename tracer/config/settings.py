"""`[tool.tracer]` in the scanned repository's pyproject.toml; the command line overrides it.

    [tool.tracer]
    protocols = ["sglang-eagle3"]          # packs to apply (default: all that fit the tree)
    rules = ["ci/tracer-extra.toml"]       # extra protocol packs, relative to the pyproject
    fail-on = "warning"                    # error | warning | info | never
    exclude = ["sglang/srt/models/experimental_*.py"]   # findings in these files are dropped
    baseline = ".tracer-baseline.json"     # accepted findings (tracer baseline writes it)

The repository root's pyproject.toml is read first; SGLang keeps its package
metadata in python/pyproject.toml, so a [tool.tracer] table there is used when
the root has none.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tracer.model.errors import UsageError
from tracer.safeio.read import Unreadable, is_within, read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAIL_ON = ("error", "warning", "info", "never")
DEFAULT_BASELINE = ".tracer-baseline.json"
KNOWN_KEYS = {"protocols", "rules", "fail-on", "fail_on", "exclude", "baseline"}


@dataclass(frozen=True)
class LintConfig:
    protocols: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()  # absolute paths
    fail_on: str = "error"
    exclude: tuple[str, ...] = ()
    baseline: str | None = None  # absolute path, or None for the default file if present
    source: str = ""  # the pyproject.toml it came from ("" when none)
    notes: tuple[str, ...] = field(default=())  # unknown keys and the like, said once on stderr


MAX_PYPROJECT_BYTES = 1024 * 1024
PYPROJECTS = ("pyproject.toml", "python/pyproject.toml")


def load_config(repo_root: str | Path) -> LintConfig:
    """[tool.tracer] of the working tree, read by the reading rule (regular file inside
    the repository, bounded); its rules and baseline must stay inside the repository."""
    root = Path(repo_root)
    for name in PYPROJECTS:
        candidate = root / name
        if not candidate.exists() and not candidate.is_symlink():
            continue
        try:
            data = read_bytes(candidate, MAX_PYPROJECT_BYTES, root)
        except Unreadable as exc:
            raise UsageError(f"cannot read [tool.tracer]: {exc}") from None
        config = config_from_text(data, candidate, root)
        if config is not None:
            return config
    return LintConfig()


def config_from_text(data: bytes, where: Path, root: Path) -> LintConfig | None:
    """The [tool.tracer] table of one pyproject.toml's bytes (None when it has none);
    paths in it are relative to ``where``'s folder and may not leave ``root``."""
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise UsageError(f"{where}: cannot read [tool.tracer]: {exc}") from None
    tool = parsed.get("tool", {})
    table = tool.get("tracer") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [tool.tracer] must be a table")
    return _from_table(table, where, root)


def _inside(path: Path, root: Path, where: Path, key: str) -> str:
    """``path`` resolved; a UsageError when it leaves the repository (a stranger's
    pyproject must not make tracer read or overwrite ``../elsewhere``)."""
    resolved = Path(os.path.abspath(path))
    if not is_within(resolved, root) or not resolved.is_relative_to(os.path.abspath(root)):
        raise UsageError(f"{where}: [tool.tracer] {key} {str(path)!r} leaves the repository; refused")
    return str(resolved)


def _from_table(table: dict, where: Path, root: Path | None = None) -> LintConfig:
    def strings(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: [tool.tracer] {key} must be a list of strings")
        return tuple(value)

    base = where.parent
    root = root if root is not None else base
    fail_on = table.get("fail-on", table.get("fail_on", "error"))
    if fail_on not in FAIL_ON:
        raise UsageError(f"{where}: [tool.tracer] fail-on must be one of {', '.join(FAIL_ON)} (got {fail_on!r})")
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise UsageError(f"{where}: [tool.tracer] baseline must be a path")
    notes = tuple(f"{where}: [tool.tracer] ignores unknown key {key!r}" for key in sorted(set(table) - KNOWN_KEYS))
    return LintConfig(
        protocols=strings("protocols"),
        rules=tuple(_inside(base / r, root, where, "rules") for r in strings("rules")),
        fail_on=fail_on,
        exclude=strings("exclude"),
        baseline=_inside(base / baseline, root, where, "baseline") if baseline else None,
        source=str(where),
        notes=notes,
    )


def merge(config: LintConfig, protocols=(), rules=(), fail_on: str | None = None, exclude=(),
          baseline: str | None = None) -> LintConfig:
    """The command line wins: a given option replaces the pyproject value (lists are not appended)."""
    return replace(
        config,
        protocols=tuple(protocols) or config.protocols,
        rules=tuple(str(Path(r).resolve()) for r in rules) or config.rules,
        fail_on=fail_on or config.fail_on,
        exclude=tuple(exclude) or config.exclude,
        baseline=str(Path(baseline).resolve()) if baseline else config.baseline,
    )


def is_excluded(path: str, patterns: tuple[str, ...]) -> bool:
    """fnmatch globs against the finding's path (relative to the scanned root); `**/` also matches no folder."""
    for pattern in patterns:
        if fnmatch.fnmatch(path, pattern) or (pattern.startswith("**/") and fnmatch.fnmatch(path, pattern[3:])):
            return True
    return False
