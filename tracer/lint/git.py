"""git, run so that nothing of the checkout under review runs: no hooks, no fsmonitor,
no external diff, no pager, no filters (every clean/smudge/process filter driver the
configuration names is switched off on every call: `git diff` ran clean filters,
`git archive` smudge filters)."""

from __future__ import annotations

import re
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tracer.model.errors import UsageError

# A checkout's own .git/config can name commands git runs on its own (an
# fsmonitor hook, an external diff, a pager, filter drivers): never from tracer.
SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=",
             "-c", "core.pager=cat", "-c", "core.sshCommand=false", "--no-pager")
_FILTERS_OFF: dict[str, tuple[str, ...]] = {}


def _filters_off(root: Path) -> tuple[str, ...]:
    """``-c filter.<name>.clean=`` (and smudge, process, required=false) for every filter
    driver the configuration defines: an empty command is no filter (reading the
    configuration runs nothing)."""
    key = str(root)
    if key not in _FILTERS_OFF:
        listed = subprocess.run(["git", *SAFE_GIT, "config", "--null", "--get-regexp", r"^filter\."], cwd=root,
                                capture_output=True)
        names = set()
        for item in listed.stdout.decode("utf-8", errors="replace").split("\0"):
            name = item.split("\n", 1)[0]
            if name.startswith("filter.") and name.count(".") >= 2:
                names.add(name[len("filter."):name.rindex(".")])
        off: list[str] = []
        for name in sorted(names):
            for setting in ("clean=", "smudge=", "process=", "required=false"):
                off += ["-c", f"filter.{name}.{setting}"]
        _FILTERS_OFF[key] = tuple(off)
    return _FILTERS_OFF[key]


def git(root: Path, *args: str, binary: bool = False):
    result = subprocess.run(["git", *SAFE_GIT, *_filters_off(root), *args], cwd=root, capture_output=True)
    if result.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout if binary else result.stdout.decode("utf-8", errors="replace")


def repo_root(start: str | Path = ".") -> Path:
    try:
        top = subprocess.run(["git", *SAFE_GIT, "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("tracer lint needs git on PATH") from None
    if top.returncode != 0:
        raise UsageError(f"{Path(start).resolve()}: not inside a git checkout (tracer lint compares against a git revision)")
    return Path(top.stdout.strip()).resolve()


def changed_files(root: Path, base_ref: str | None) -> tuple[str, list[str]]:
    """(base commit, touched paths relative to the repository root)."""
    if base_ref:
        try:
            base = git(root, "merge-base", base_ref, "HEAD").strip()
        except UsageError as exc:
            raise UsageError(f"{exc} (is {base_ref!r} fetched? a shallow CI clone needs the base history, "
                             "e.g. actions/checkout with fetch-depth: 0)") from None
        names = tree_names(git(root, "diff", "--name-only", "--no-renames", "-z", f"{base_ref}...HEAD"))
    else:
        try:
            base = git(root, "rev-parse", "--verify", "HEAD").strip()
        except UsageError:
            raise UsageError("the repository has no commit yet: nothing to compare against") from None
        names = set()
    names |= tree_names(git(root, "diff", "--name-only", "--no-renames", "-z", "HEAD"))
    names |= tree_names(git(root, "ls-files", "--others", "--exclude-standard", "-z"))
    return base, sorted(names)


def tree_names(output: str) -> set[str]:
    return {n for n in output.split("\0") if n}


def export_tree(root: Path, commit: str, prefix: str, target: Path) -> bool:
    """The package folder (and pyproject files, for the version) at ``commit`` into ``target``."""
    paths = [prefix] + [p for p in ("pyproject.toml", "python/pyproject.toml")
                        if git(root, "ls-tree", "--name-only", commit, "--", p).strip()]
    if not git(root, "ls-tree", "--name-only", commit, "--", prefix).strip():
        return False
    data = git(root, "archive", "--format=tar", commit, "--", *paths, binary=True)
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.seek(0)
        with tarfile.open(fileobj=fh) as tar:
            members = [m for m in tar.getmembers() if (m.isfile() or m.isdir())
                       and not m.name.startswith("/") and ".." not in Path(m.name).parts]
            tar.extractall(target, members)
    return True


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class FileDiff:
    """The lines a change touches in one file: ``old`` ranges at the base, ``new`` ranges in the
    working tree (1-based, inclusive; a pure deletion is an empty range ``(n + 1, n)`` at the line
    the removed text followed)."""

    old: tuple[tuple[int, int], ...] = ()
    new: tuple[tuple[int, int], ...] = ()
    added: bool = False  # the file is new (untracked or absent at the base)

    def touches_old(self, first: int, last: int) -> bool:
        return any(a <= last and b >= first or (b < a and first <= a <= last + 1) for a, b in self.old)

    def new_line_for_old(self, first: int, last: int) -> int:
        """The working tree's line of the first change inside base lines first..last (0: none)."""
        for (a, b), (c, d) in zip(self.old, self.new):
            if a <= last and b >= first or (b < a and first <= a <= last + 1):
                return max(c, 1)
        return 0

    def is_new_line(self, line: int) -> bool:
        return self.added or any(c <= line <= d for c, d in self.new)


class ChangedLines:
    """Per touched path, the lines the working tree changes against ``commit`` (committed and
    not), read on demand with one ``git diff`` per path (never a header to parse: a quoted or
    odd file name cannot mislead it); None for a path the change does not touch."""

    def __init__(self, root: Path, commit: str, touched: list[str]):
        self.root = root
        self.commit = commit
        self.touched = set(touched)
        self._seen: dict[str, FileDiff] = {}

    def get(self, path: str) -> FileDiff | None:
        if not self.commit or path not in self.touched:
            return None
        if path not in self._seen:
            self._seen[path] = self._read(path)
        return self._seen[path]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.get(path) is not None

    def _read(self, path: str) -> FileDiff:
        if not git(self.root, "ls-tree", "--name-only", self.commit, "--", path).strip():
            return FileDiff(added=True)  # new in the change (committed on the branch, or untracked)
        out = git(self.root, "diff", "-U0", "--no-ext-diff", "--no-renames", "--no-textconv", "--no-color",
                  self.commit, "--", path)
        old: list[tuple[int, int]] = []
        new: list[tuple[int, int]] = []
        for line in out.splitlines():
            match = _HUNK.match(line) if line.startswith("@@") else None
            if match:
                a, b, c, d = (int(g) if g is not None else 1 for g in match.groups())
                old.append((a, a + b - 1) if b else (a + 1, a))
                new.append((c, c + d - 1) if d else (c + 1, c))
        return FileDiff(tuple(old), tuple(new))


def refuse_submodules(root: Path, commit: str, prefix: str) -> None:
    """A git submodule inside the package: the base revision holds only its commit id (a
    gitlink), the working tree its files, so the re-trace and ``--full`` would judge different
    trees. lint says so in one line (exit 2) instead of answering either way."""
    staged = git(root, "ls-files", "--stage", "-z", "--", prefix or ".")
    based = git(root, "ls-tree", "-r", "-z", "--full-tree", commit, "--", prefix or ".") if commit else ""
    found = sorted({entry.split("\t", 1)[-1] for entry in (staged + "\0" + based).split("\0")
                    if entry.startswith("160000 ")})
    if found:
        raise UsageError(f"{found[0]} is a git submodule inside the package {prefix or '.'}; tracer lint compares "
                         "the package's own files and cannot judge a submodule's (run `tracer scan` on the checkout)")
