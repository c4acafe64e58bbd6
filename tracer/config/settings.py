"""`[tool.tracer]` in the scanned repository's pyproject.toml; the command line overrides it.

    [tool.tracer]
    protocols = ["sglang-eagle3"]          # packs to apply (default: all that fit the tree)
    rules = ["ci/tracer-extra.toml"]       # extra protocol packs, relative to the pyproject
    fail-on = "warning"                    # error | warning | info | never
    exclude = ["sglang/srt/models/experimental_*.py"]   # findings in these files are dropped
    baseline = ".tracer-baseline.json"     # accepted findings (tracer baseline writes it)
    select = ["ALL"]                       # rules reported, by slug or prefix (ruff's way; default all)
    ignore = ["silent-fallback"]           # rules never reported
    extend-select = ["missing-setter"]     # added to select; an info rule named here is printed
    package = "myfork"                     # the framework package's name in a fork (as --package)
    plugins = ["../vllm-ascend"]           # plugins read with the tree (as --plugin; inside the repository)

The repository root's pyproject.toml is read first; SGLang keeps its package
metadata in python/pyproject.toml, so a [tool.tracer] table there is used when
the root has none. `tracer scan PATH` and `tracer report PATH` look in PATH and
then its parents (the first pyproject.toml holding [tool.tracer] wins, as ruff
finds its settings); `--config FILE` names the file (a pyproject.toml, or a
TOML file whose top level is the table).
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
KNOWN_KEYS = {"protocols", "rules", "fail-on", "fail_on", "exclude", "baseline", "select", "ignore",
              "extend-select", "extend_select", "package", "plugins"}


@dataclass(frozen=True)
class LintConfig:
    protocols: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()  # absolute paths
    fail_on: str = "error"
    exclude: tuple[str, ...] = ()
    baseline: str | None = None  # absolute path, or None for the default file if present
    select: tuple[str, ...] | None = None  # rule selectors (slug or prefix, "ALL"); None: every rule
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    package: str = ""  # the framework package's name in a fork (--package)
    replace_builtin: bool = False  # --replace-builtin (command line only)
    plugins: tuple[str, ...] = ()  # plugin folders (absolute), as --plugin
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


def discover_config(start: str | Path) -> LintConfig:
    """The settings of a scanned tree: PATH (and PATH/python) first, then PATH's parents;
    the first pyproject.toml holding [tool.tracer] wins. None found: the defaults."""
    here = Path(start).resolve()
    if not here.is_dir():
        here = here.parent
    found = load_config(here)
    if found.source:
        return found
    for parent in here.parents:
        candidate = parent / "pyproject.toml"
        if candidate.is_file():
            found = load_config_file(candidate, missing_ok=True)
            if found.source:
                return found
    return LintConfig()


def load_config_file(path: str | Path, missing_ok: bool = False) -> LintConfig:
    """`--config FILE`: a pyproject.toml ([tool.tracer]) or a TOML file whose top level is the table."""
    where = Path(path)
    try:  # the reading rule, as for any file tracer opens (the command line named this one)
        data = tomllib.loads(read_bytes(where, MAX_PYPROJECT_BYTES, where.parent).decode("utf-8"))
    except Unreadable as exc:
        raise UsageError(f"{where}: cannot read tracer settings: {exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise UsageError(f"{where}: cannot read tracer settings: {exc}") from None
    if where.name == "pyproject.toml":
        table = data.get("tool", {}).get("tracer")
        if table is None:
            if missing_ok:
                return LintConfig()
            raise UsageError(f"{where}: no [tool.tracer] table")
    else:
        table = data.get("tool", {}).get("tracer", data) if "tool" in data else data
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [tool.tracer] must be a table")
    return _from_table(table, where)


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
    select = strings("select") if "select" in table else None
    extend_select = strings("extend-select") or strings("extend_select")
    package = table.get("package", "")
    if not isinstance(package, str):
        raise UsageError(f"{where}: [tool.tracer] package must be a string")
    return LintConfig(
        package=package,
        plugins=tuple(_inside(base / p, root, where, "plugins") for p in strings("plugins")),
        protocols=strings("protocols"),
        rules=tuple(_inside(base / r, root, where, "rules") for r in strings("rules")),
        fail_on=fail_on,
        exclude=strings("exclude"),
        baseline=_inside(base / baseline, root, where, "baseline") if baseline else None,
        source=str(where),
        notes=notes,
        select=select,
        ignore=strings("ignore"),
        extend_select=extend_select,
    )


def merge(config: LintConfig, protocols=(), rules=(), fail_on: str | None = None, exclude=(),
          baseline: str | None = None, package: str = "", replace_builtin: bool = False,
          plugins=()) -> LintConfig:
    """The command line wins: a given option replaces the pyproject value (lists are not appended)."""
    return replace(
        config,
        plugins=tuple(str(Path(p).resolve()) for p in plugins) or config.plugins,
        package=package or config.package,
        replace_builtin=replace_builtin or config.replace_builtin,
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
