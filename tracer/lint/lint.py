"""Pre-merge lint: `tracer lint` and `tracer baseline` inside a git checkout of the framework.

Only what a change touches is re-traced, and only what it changes is reported:

1. touched files: `git diff --name-only` (working tree against HEAD, or with
   --base REF the branch `REF...HEAD` plus the working tree), untracked files too;
2. the base revision (HEAD, or the merge base with REF) is exported with
   `git archive` and scanned once; that record (scan JSON, code fingerprints of
   its findings, and for every entry class the files its chain, MRO and entry
   registration pass through) is cached by commit;
3. the reverse map file -> entry classes picks the chains a touched file can
   change (a base class, an inner model, a delegate); those are re-traced on the
   working tree, lazily, from the summary cache; a touched file outside the
   model folders re-runs the runner analysis;
4. findings are paired by their facts (slug, protocol, entry) and, strictest
   first, their anchor (file and enclosing def) and fingerprint (the statement's
   normalised tokens) (fingerprint.py), so moved, reformatted or commented code
   is the same finding; what is left is filtered by `[tool.tracer]` excludes,
   inline `# tracer: ignore[...]` (with --base, the base's: a suppression the
   change adds for its own new finding is `new-suppression`) and the baseline;
5. each re-traced entry's verdict is compared with the base's (verdicts.py):
   `ok` lost is `support-regression`, gained is `support-gained`.

A lint whose inputs (base commit, touched files' contents, options, baseline)
did not change since the last run is answered from a result cache.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tracer import __version__
from tracer.checks import finding as make_finding
from tracer.config.settings import LintConfig, is_excluded
from tracer.index.source import read_regular_bytes
from tracer.lint.base import base_record
from tracer.lint.baseline import baseline_identities, read_baseline
from tracer.lint.fingerprint import add_fingerprints, identities, match, message_likeness
from tracer.lint.gate import blob_at
from tracer.lint.git import ChangedLines, changed_files, refuse_submodules, repo_root
from tracer.lint.records import MAX_RECORD_BYTES, RECORD_VERSION, NeedFullScan, Options, lint_cache_dir, package_prefix
from tracer.lint.retrace import full_head, retrace
from tracer.lint.suppress import SourceLines, apply_to_json, parse_suppression
from tracer.lint.verdicts import Sources, reader, verdict_changes
from tracer.model.errors import UsageError
from tracer.model.escape import printable
from tracer.model.kinds import at_least
from tracer.present.lint_json import record_bytes, record_from_bytes
from tracer.present.scan_json import finding_to_json
from tracer.safeio.auth import load_entry, store_entry

_MAX_READ = 4 * 1024 * 1024  # scanned files over 1 MiB are never parsed (project.MAX_FILE_BYTES)


def lint(start: str | Path = ".", base_ref: str | None = None, config: LintConfig | None = None,
         options: Options | None = None, full: bool = False, use_baseline: bool = True, progress=None,
         baseline_bytes: bytes | None = None, notes: tuple[str, ...] = ()) -> dict:
    """``baseline_bytes``: the baseline to apply (with --base, the base commit's); None
    reads the configured file. ``notes``: what the caller wants said with the result
    (e.g. that the change edits the gate's settings)."""
    started = time.perf_counter()
    root = repo_root(start)
    config = config or LintConfig()
    options = options or Options(config.protocols, config.rules, None, True, 0)
    commit, touched = changed_files(root, base_ref)
    prefix = package_prefix(root, options)
    refuse_submodules(root, commit, prefix)
    relevant = [p for p in touched if p == prefix or p.startswith(prefix + "/")]
    if baseline_bytes is None:
        baseline_bytes = read_baseline(root, config)
    result_key = _result_key(commit, relevant, root, options, config, baseline_bytes, full, use_baseline,
                             base_ref is not None)
    cached = _cached_result(options, result_key)
    if cached is not None:
        cached["notes"] = list(notes)
        cached["stats"]["seconds"] = round(time.perf_counter() - started, 3)
        cached["stats"]["result_cache"] = True
        return cached

    mode = "full" if full else "re-trace"
    if not relevant:
        result = _result(root, base_ref, commit, touched, relevant, [], [], [], [], [], {}, [], config)
        mode = "no change"
    else:
        record = base_record(root, commit, prefix, options, progress)
        try:
            head = full_head(root, record, relevant, options) if full else retrace(root, record, relevant, options)
        except NeedFullScan as exc:
            mode = f"full ({exc})"
            head = full_head(root, record, relevant, options)
        except (UsageError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the exact path still answers; say why it was taken
            if os.environ.get("TRACER_DEBUG"):
                raise
            mode = f"full (re-trace failed: {type(exc).__name__}: {exc})"
            head = full_head(root, record, relevant, options)
        result = compare(root, record, head, relevant, config, baseline_bytes if use_baseline else b"",
                         gate=base_ref is not None)
        result = _result(root, base_ref, commit, touched, relevant, **result, config=config)
    result["stats"] = {"seconds": round(time.perf_counter() - started, 3), "result_cache": False, "mode": mode,
                       "touched": len(touched), "touched_in_package": len(relevant),
                       "entries_traced": sum(len(v) for v in result["affected"].values())}
    _store_result(options, result_key, result)
    result["notes"] = list(notes)
    return result


def compare(root: Path, record: dict, head: dict, touched: list[str], config: LintConfig, baseline_bytes: bytes,
            gate: bool = False) -> dict:
    """New, fixed and unreached findings of the re-traced chains; ``gate`` (--base): suppressions
    come from the base."""
    head_findings = [f for f in head["findings"] if not is_excluded(f["file"], config.exclude)]
    probe = {"root": str(root), "findings": head_findings, "models": head["models"], "framework": {}}
    apply_to_json(probe, root, files=[p for p in touched if (root / p).is_file()])
    kept, suppressed = probe["findings"], probe["suppressed"]
    add_fingerprints(kept + suppressed, root)

    everything = head.get("everything", False)
    affected = {(p, e) for p, entries in head["affected"].items() for e in entries}
    touched_set = set(touched)

    def in_scope(finding: dict, key) -> bool:
        if everything:
            return True
        slug, proto, entry = key.slug, key.protocol, key.entry
        if entry:
            return (proto, entry) in affected
        if slug in ("input-error", "unused-suppression"):
            return finding["file"] in touched_set
        return head["runner"]

    base_items = [(ident, (f, False)) for f in record["scan"]["findings"] for ident in identities(f)
                  if in_scope(f, ident)]
    base_items += [(ident, (f, True)) for f in record["scan"].get("suppressed", []) for ident in identities(f)
                   if in_scope(f, ident)]
    head_items = [(ident, (f, False)) for f in kept for ident in identities(f) if in_scope(f, ident)]
    head_items += [(ident, (f, True)) for f in suppressed for ident in identities(f) if in_scope(f, ident)]
    pairs, base_left, head_left = match(base_items, head_items, message_likeness)
    unchanged = sum(1 for _, (_, hidden) in pairs if not hidden)
    fresh_items = [(ident, f) for ident, (f, hidden) in head_left if not hidden]
    accepted = [(ident, None) for ident in baseline_identities(baseline_bytes)]
    in_baseline = {id(ident) for _, (ident, _) in match(accepted, [(i, (i, f)) for i, f in fresh_items])[0]}

    new: list[dict[str, Any]] = []
    baselined: list[dict[str, Any]] = []
    for finding, group in _grouped((ident, (ident, f)) for ident, f in fresh_items):
        entries = [ident.entry for ident in group if ident.entry]
        shown = dict(finding, entries=entries, entry=entries[0] if entries else finding.get("entry"))
        listed = [ident for ident in group if id(ident) in in_baseline]
        (baselined if len(listed) == len(group) else new).append(shown)

    commit = record.get("commit") or ""
    diffs = ChangedLines(root, commit, touched)  # read only when a verdict changed or a suppression is in question
    if gate:  # suppressions come from the base: one the change adds for its own new finding is reported
        hidden_new = [(ident, (ident, f)) for ident, (f, hidden) in head_left if hidden]
        for finding, group in _grouped(hidden_new):
            diff = diffs.get(finding["file"])
            if diff is not None and diff.is_new_line(finding["line"]):
                new.append(_new_suppression(root, finding, [i.entry for i in group if i.entry], config))
    base_text = _base_reader(root, commit)
    changes = [f for f in verdict_changes(record, head, diffs, Sources(base_text, reader(root, _MAX_READ)))
               if not is_excluded(f["file"], config.exclude)]
    # A lost verdict whose every error is accepted (the base's baseline, an honoured suppression)
    # is accepted with them; one with a new error, or with none to accept (missing), is new.
    def error_entries(findings: list[dict]) -> set[str]:
        return {e for f in findings if f["severity"] == "error" for e in f.get("entries") or [f.get("entry")] if e}

    loud, accepted_for, hushed = error_entries(new), error_entries(baselined), error_entries(suppressed)
    for change in changes:
        entry = change["entry"]
        if change["slug"] != "support-regression" or entry in loud or entry not in accepted_for | hushed:
            new.append(change)
        else:
            (baselined if entry in accepted_for else suppressed).append(change)

    fixed: list[dict[str, Any]] = []
    unreached: list[dict[str, Any]] = []
    head_models = {(m["protocol"], m["entry"]): m for m in head["models"]}
    gone_items = [(ident, (ident, f)) for ident, (f, hidden) in base_left
                  if not hidden and not is_excluded(f["file"], config.exclude)]
    for finding, group in _grouped(gone_items):
        gone = [ident.entry for ident in group]
        # A finding is fixed when the chain still reaches its code (or works); one whose
        # chain now breaks or stops before it only went out of sight.
        reached = [e for e in gone if not e or _still_reached(head_models, finding, e)]
        hidden = [e for e in gone if e and e not in reached]
        if reached:
            fixed.append(dict(finding, entries=[e for e in reached if e], entry=(reached[0] or None)))
        if hidden:
            unreached.append(dict(finding, entries=hidden, entry=hidden[0]))
    models = head["models"]
    return {"new": new, "fixed": fixed, "unreached": unreached, "suppressed": suppressed, "baselined": baselined,
            "unchanged": unchanged, "affected": head["affected"], "models": models,
            "call_sites": head["call_sites"] if head["runner"] else []}


def _new_suppression(root: Path, hidden: dict, entries: list[str], config: LintConfig) -> dict:
    """The ``new-suppression`` finding for a suppressed new finding, at the gate's severity."""
    text = SourceLines(root).line(hidden["file"], hidden["line"])
    parsed = parse_suppression(text)
    col, slugs = parsed if parsed is not None else (0, None)
    what = "`# tracer: ignore`" if slugs is None else f"`# tracer: ignore[{', '.join(sorted(slugs))}]`"
    made = finding_to_json(make_finding("new-suppression", "", protocol=hidden.get("protocol") or "",
                                   entry=entries[0] if entries else None, file=hidden["file"], line=hidden["line"],
                                   col=col, chain=tuple(hidden.get("chain") or ()), what=what, rule=hidden["slug"],
                                   message=hidden["message"]))
    # at the gate's severity when the hidden finding would fail the gate; else it only says so
    gated = config.fail_on in ("error", "warning", "info") and at_least(hidden["severity"], config.fail_on)
    severity = config.fail_on if gated else "info" if config.fail_on != "never" else made["severity"]
    return dict(made, severity=severity, entries=entries, hides=hidden)


def _base_reader(root: Path, commit: str):
    def read(path: str) -> str | None:
        data = blob_at(root, commit, path) if commit else None
        return data.decode("utf-8", errors="replace") if data is not None else None

    return read


def _grouped(items) -> list[tuple[dict, list]]:
    """(finding, its identities) in first-seen order, from (identity, (identity, finding)) items."""
    groups: dict[int, tuple[dict, list]] = {}
    for _, (ident, finding) in items:
        groups.setdefault(id(finding), (finding, []))[1].append(ident)
    return list(groups.values())


def _still_reached(models: dict, finding: dict, entry: str) -> bool:
    """Whether the head's chain of ``entry`` still works or still passes through the file
    of a base finding that is gone (then the change fixed it)."""
    model = models.get((finding.get("protocol"), entry))
    if model is None or model.get("verdict") == "ok" or finding.get("slug") == "missing-setter":
        return True  # the entry class is gone, its chain works, or it was about having no chain: fixed
    return any(hop.get("file") == finding.get("file") for hop in model.get("chain") or ())


def _result(root, base_ref, commit, touched, relevant, new, fixed, suppressed, baselined, models=(), affected=None,
            call_sites=(), config=None, unchanged=0, unreached=()) -> dict:
    config = config or LintConfig()
    return {
        "tool": {"name": "tracer", "version": __version__, "command": "lint"},
        "root": str(root), "base": {"ref": base_ref or "HEAD", "commit": commit},
        "touched": list(touched), "touched_in_package": list(relevant),
        "affected": affected or {}, "fail_on": config.fail_on,
        "findings": sorted(new, key=_order), "fixed": sorted(fixed, key=_order),
        "unreached": sorted(unreached, key=_order),
        "suppressed": list(suppressed), "baselined": list(baselined), "unchanged": unchanged,
        "models": list(models), "call_sites": list(call_sites), "protocols": sorted(affected or {}),
    }


def _order(f: dict):
    return (f["file"], f["line"], f["col"], f["slug"])


def _result_key(commit, relevant, root, options, config, baseline_bytes, full, use_baseline, gate) -> str:
    digest = hashlib.sha256()
    for part in (__version__, RECORD_VERSION, commit, options.digest(), repr(sorted(config.exclude)),
                 str(full), str(use_baseline), config.fail_on, str(gate)):
        digest.update(part.encode() + b"\0")
    digest.update(hashlib.sha256(baseline_bytes).digest())
    for path in relevant:
        digest.update(path.encode() + b"\0")
        data = read_regular_bytes(root / path, _MAX_READ, root)  # never /dev/zero through a link (OOM)
        digest.update(hashlib.sha256(data).digest() if data is not None else b"<absent>")
    return digest.hexdigest()


def _cached_result(options: Options, key: str) -> dict | None:
    directory = lint_cache_dir(options)
    if directory is None:
        return None
    return record_from_bytes(load_entry(directory / f"result-{key}.json", directory, MAX_RECORD_BYTES))


def _store_result(options: Options, key: str, result: dict) -> None:
    directory = lint_cache_dir(options)
    if directory is not None:
        store_entry(directory / f"result-{key}.json", directory, record_bytes(result))


def format_lint_text(result: dict) -> str:
    lines = []
    show_info = result.get("fail_on") == "info"
    hidden = 0
    lost: dict[tuple, list[dict]] = {}  # one change that costs several entry classes their support: one entry
    for f in result["findings"]:
        if f["slug"] == "support-regression":
            lost.setdefault((f["file"], f["line"], f["protocol"]), []).append(f)
    for f in result["findings"]:
        if f["severity"] == "info" and not show_info and f["slug"] != "unused-suppression":
            hidden += 1
            continue
        group = lost.get((f["file"], f["line"], f["protocol"]), []) if f["slug"] == "support-regression" else []
        if group and f is not group[0]:
            continue
        lines.append(f"{f['file']}:{f['line']}:{f['col']}: {f['slug']} [{f['severity']}] {f['message']}")
        if len(group) > 1:
            lines.append(f"    the same change costs {len(group) - 1} more entry classes their support: " + ", ".join(
                f"{g['entry'].rsplit('.', 1)[-1]} ({g['message'].split(' support (', 1)[1].split(')', 1)[0]})"
                for g in group[1:]))
        if len(f.get("entries") or []) > 1:
            lines.append(f"    affects {len(f['entries'])} entry classes: "
                         + ", ".join(e.rsplit('.', 1)[-1] for e in f["entries"][:6])
                         + (" ..." if len(f["entries"]) > 6 else ""))
        lines.append(f"    hint: {f['hint']}")
    if result["fixed"]:
        lines.append("fixed: " + "; ".join(
            f"{f['slug']} {f['file']}:{f['line']}"
            + (f" ({', '.join(e.rsplit('.', 1)[-1] for e in f['entries'][:3])}{' ...' if len(f['entries']) > 3 else ''})"
               if f.get("entries") else "")
            for f in result["fixed"]))
    if result.get("unreached"):
        lines.append("no longer reached (their chains now stop before them; not fixed): " + "; ".join(
            f"{f['slug']} {f['file']}:{f['line']} ({', '.join(e.rsplit('.', 1)[-1] for e in f['entries'][:3])}"
            f"{' ...' if len(f['entries']) > 3 else ''})" for f in result["unreached"]))
    lines = [printable(line) for line in lines]  # a name or value holding a newline must not forge a line
    lines.append(summary_line(result))
    if hidden:
        lines.append(f"({hidden} new info findings, e.g. missing-setter, not listed: --fail-on info or --format json shows them)")
    return "\n".join(lines) + "\n"


def summary_line(result: dict) -> str:
    by_sev = Counter(f["severity"] for f in result["findings"])
    new = ", ".join(f"{by_sev[s]} {s}" for s in ("error", "warning", "info") if by_sev[s]) or "none"
    stats = result.get("stats", {})
    traced = sum(len(v) for v in result.get("affected", {}).values())
    extra = []
    if result.get("suppressed"):
        added = sum(1 for f in result["findings"] if f["slug"] == "new-suppression")
        extra.append(f"{len(result['suppressed'])} suppressed inline"
                     + (f" ({added} of them added by the change itself: new-suppression)" if added else ""))
    if result.get("baselined"):
        extra.append(f"{len(result['baselined'])} in the baseline")
    if result.get("unreached"):
        extra.insert(0, f"{len(result['unreached'])} no longer reached")
    return (f"tracer lint: new findings: {new}; fixed: {len(result['fixed'])}; "
            f"unchanged: {result.get('unchanged', 0)}{'; ' + ', '.join(extra) if extra else ''}. "
            f"{len(result.get('touched_in_package', []))} touched files in the package, {traced} chains re-traced, "
            f"against {result['base']['ref']} ({result['base']['commit'][:10]}), in {stats.get('seconds', 0)} s"
            f"{' (cached result)' if stats.get('result_cache') else ''}.")


def exit_code(result: dict, fail_on: str) -> int:
    return 1 if any(at_least(f["severity"], fail_on) for f in result["findings"]) else 0
