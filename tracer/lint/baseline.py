"""The baseline: findings a team has accepted; lint reports only what is not in it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tracer.analysis.pipeline import scan
from tracer.config.settings import DEFAULT_BASELINE, LintConfig, is_excluded
from tracer.lint.fingerprint import add_fingerprints, keys
from tracer.lint.git import repo_root
from tracer.lint.records import Options
from tracer.lint.suppress import apply_suppressions
from tracer.model.errors import UsageError
from tracer.present.scan_json import to_json


def _baseline_path(root: Path, config: LintConfig) -> Path | None:
    if config.baseline:
        return Path(config.baseline)
    return root / DEFAULT_BASELINE


def _baseline_keys(data: bytes) -> Counter:
    if not data:
        return Counter()
    try:
        doc = json.loads(data)
        return Counter((e["slug"], e.get("protocol") or "", e.get("entry") or "", e["fingerprint"])
                       for e in doc["findings"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"baseline file is not a tracer baseline: {exc}") from None


def write_baseline(start: str | Path, out: str | Path | None, config: LintConfig, options: Options) -> tuple[Path, int]:
    """Every finding of the working tree (after excludes and inline suppressions), keyed for lint."""
    root = repo_root(start)
    result = scan(root, options.packs(), options.cache_dir, options.use_cache, options.jobs).result
    result = apply_suppressions(result, root)
    data = to_json(result)
    data["findings"] = [f for f in data["findings"] if not is_excluded(f["file"], config.exclude)]
    add_fingerprints(data["findings"], root)
    entries = []
    for finding in data["findings"]:
        for slug, proto, entry, fp in keys(finding):
            entries.append({"slug": slug, "protocol": proto, "entry": entry, "fingerprint": fp,
                            "file": finding["file"], "line": finding["line"], "message": finding["message"]})
    entries.sort(key=lambda e: (e["file"], e["slug"], e["entry"], e["fingerprint"]))
    path = Path(out) if out else (_baseline_path(root, config) or root / DEFAULT_BASELINE)
    doc = {"tool": "tracer", "version": 1,
           "comment": "Accepted findings: tracer lint reports only findings not listed here. "
                      "Keyed on slug, protocol, entry and a fingerprint of the enclosing def and source line; "
                      "file and line are for readers.",
           "findings": entries}
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path, len(entries)
