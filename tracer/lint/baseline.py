"""The baseline: findings a team has accepted; lint reports only what is not in it."""

from __future__ import annotations

from pathlib import Path

from tracer.analysis.pipeline import scan
from tracer.config.settings import DEFAULT_BASELINE, LintConfig, is_excluded
from tracer.lint.fingerprint import Identity, add_fingerprints, identities
from tracer.lint.git import repo_root
from tracer.lint.records import Options
from tracer.lint.suppress import apply_suppressions
from tracer.model.errors import UsageError
from tracer.present.lint_json import BaselineEntry, baseline_bytes, baseline_entries
from tracer.present.scan_json import to_json
from tracer.safeio.read import Unreadable, read_bytes
from tracer.safeio.write import Unwritable, write_bytes


def _baseline_path(root: Path, config: LintConfig) -> Path | None:
    if config.baseline:
        return Path(config.baseline)
    return root / DEFAULT_BASELINE


MAX_BASELINE_BYTES = 64 * 1024 * 1024


def read_baseline(root: Path, config: LintConfig) -> bytes:
    """The baseline's bytes by the reading rule: the default file (absent: none) must be a
    regular file inside the repository; a named one must be readable (else a UsageError)."""
    path = _baseline_path(root, config)
    if path is None:
        return b""
    named = config.baseline is not None
    if not named and not path.exists() and not path.is_symlink():
        return b""
    try:
        return read_bytes(path, MAX_BASELINE_BYTES, None if named else root)
    except Unreadable as exc:
        raise UsageError(f"cannot read the baseline: {exc}") from None


def baseline_identities(data: bytes) -> list[Identity]:
    """The accepted findings' identities (a baseline of version 1 has no anchors: those match
    on the fingerprint alone)."""
    return [Identity(*entry) for entry in baseline_entries(data)]


def write_baseline(start: str | Path, out: str | Path | None, config: LintConfig, options: Options) -> tuple[Path, int]:
    """Every finding of the working tree (after excludes and inline suppressions), keyed for lint."""
    root = repo_root(start)
    result = scan(root, options.packs(), options.cache_dir, options.use_cache, options.jobs).result
    result = apply_suppressions(result, root)
    data = to_json(result)
    data["findings"] = [f for f in data["findings"] if not is_excluded(f["file"], config.exclude)]
    add_fingerprints(data["findings"], root)
    entries: list[BaselineEntry] = []
    for finding in data["findings"]:
        for slug, proto, entry, where, fp in identities(finding):
            entries.append(BaselineEntry(slug, proto, entry, where, fp, finding["file"], finding["line"],
                                         finding["message"]))
    entries.sort(key=lambda e: (e.file, e.slug, e.entry, e.fingerprint))
    # -o is the user's own choice; the configured or default file stays inside the repository
    path = Path(out) if out else (_baseline_path(root, config) or root / DEFAULT_BASELINE)
    write_root = None if out else root
    try:
        write_bytes(path, baseline_bytes(entries), write_root)
    except Unwritable as exc:
        raise UsageError(f"cannot write the baseline: {exc}") from None
    return path, len(entries)
