"""The gate belongs to the base: with ``--base``, lint's settings come from the base
commit, never from the change under review.

A pull request must not steer its own verdict: ``fail-on = "never"``,
``exclude = ["*"]``, a rules pack that replaces a built-in one, or a baseline
that lists its new findings. So with ``--base REF`` the ``[tool.tracer]`` table,
the rules packs it names and the baseline are read from the merge base (git
blobs, never the working tree; only regular blobs, bounded), copied into a
private temporary folder for the run; when the change edits any of them lint
says so (``notes``), and the edit takes effect once it is merged.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from tracer.config.settings import MAX_PYPROJECT_BYTES, PYPROJECTS, LintConfig, config_from_text, load_config
from tracer.lint.git import git
from tracer.model.errors import UsageError
from tracer.safeio.read import read_or_none

MAX_BLOB_BYTES = 16 * 1024 * 1024


def blob_at(root: Path, commit: str, path: str, limit: int = MAX_BLOB_BYTES) -> bytes | None:
    """A regular file's bytes at ``commit`` (None: absent, a link, a submodule, or too big)."""
    listing = git(root, "ls-tree", "-z", "--long", commit, "--", path)
    entry = next((e for e in listing.split("\0") if e), "")
    meta, _, name = entry.partition("\t")
    parts = meta.split()
    if name != path or len(parts) < 4 or parts[0] not in ("100644", "100755") or parts[1] != "blob":
        return None
    if not parts[3].isdigit() or int(parts[3]) > limit:
        return None
    return git(root, "cat-file", "blob", parts[2], binary=True)


class BaseSettings:
    """The base commit's settings, materialised in a temporary folder for the run
    (``with BaseSettings(...) as settings``); ``config`` is what lint applies."""

    def __init__(self, root: Path, base_ref: str):
        self.root = root
        self.base_ref = base_ref
        self.folder = Path(tempfile.mkdtemp(prefix="tracer-gate-"))
        self.notes: list[str] = []
        self.config = LintConfig()
        self.baseline_bytes: bytes = b""

    def __enter__(self) -> BaseSettings:
        try:
            self._load()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def _load(self) -> None:
        try:
            commit = git(self.root, "merge-base", self.base_ref, "HEAD").strip()
        except UsageError as exc:
            raise UsageError(f"{exc} (is {self.base_ref!r} fetched? a shallow CI clone needs the base history, "
                             "e.g. actions/checkout with fetch-depth: 0)") from None
        short = f"{self.base_ref} ({commit[:10]})"
        config = None
        for name in PYPROJECTS:
            data = blob_at(self.root, commit, name, MAX_PYPROJECT_BYTES)
            if data is None:
                continue
            target = self.folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            config = config_from_text(data, target, self.folder)
            if config is not None:
                config = replace(config, source=f"{name} at {short}")
                break
        config = config or LintConfig()
        for rule in config.rules:
            relative = Path(rule).relative_to(self.folder).as_posix()
            data = blob_at(self.root, commit, relative, MAX_BLOB_BYTES)
            if data is None:
                raise UsageError(f"[tool.tracer] rules {relative!r} at {short}: not a file in that commit")
            target = self.folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        baseline_relative = (Path(config.baseline).relative_to(self.folder).as_posix() if config.baseline
                             else ".tracer-baseline.json")
        self.baseline_bytes = blob_at(self.root, commit, baseline_relative) or b""
        self.config = config
        self._compare(config, baseline_relative, short)

    def _compare(self, base: LintConfig, baseline_relative: str, short: str) -> None:
        """Notes for what the change edits in the gate's settings (applied after the merge)."""
        try:
            head = load_config(self.root)
        except UsageError as exc:
            self.notes.append(f"the change's [tool.tracer] is unreadable ({exc}); lint uses the base's, {short}")
            return

        def relative(paths: tuple[str, ...], folder: Path) -> list[str]:
            return [Path(p).relative_to(folder).as_posix() for p in paths]

        fields = ("protocols", "fail_on", "exclude")
        if any(getattr(head, f) != getattr(base, f) for f in fields) or \
                relative(head.rules, self.root) != relative(base.rules, self.folder) or \
                (head.baseline and Path(head.baseline).relative_to(self.root).as_posix()) != \
                (base.baseline and baseline_relative):
            self.notes.append(f"the change edits [tool.tracer]; lint applies the base's, {short}, "
                              "until it is merged")
        for rule in relative(base.rules, self.folder):
            if read_or_none(self.root / rule, MAX_BLOB_BYTES, self.root) != (self.folder / rule).read_bytes():
                self.notes.append(f"the change edits the rules pack {rule}; lint applies the base's, {short}")
        for rule in set(relative(head.rules, self.root)) - set(relative(base.rules, self.folder)):
            self.notes.append(f"the change adds the rules pack {rule}; lint applies the base's packs, {short}")
        worktree_baseline = read_or_none(self.root / baseline_relative, MAX_BLOB_BYTES, self.root) or b""
        if worktree_baseline != self.baseline_bytes:
            self.notes.append(f"the change edits the baseline {baseline_relative}; lint applies the base's, {short}")
