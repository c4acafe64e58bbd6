"""`tracer sweep PKG==LO..HI -o DIR`: scan every release of a framework in a version
range and write the history of each model's verdict.

Releases come from PyPI through pip (`pip index versions`, `pip download --no-deps`),
are cached (the wheel or source distribution, and its unpacked `<pkg>/**/*.py`), and
are scanned in parallel worker processes that share one summary cache, so a file
unchanged between releases is parsed once. A release that cannot be downloaded,
unpacked or scanned is listed with the reason; the others stand.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import click

from tracer.discover import UsageError

_SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^.\s][^\s]*?)\s*(?:\.\.\s*([^\s]+))?\s*$")
_UNPACKED_MARK = ".tracer-unpacked"


@dataclass
class Release:
    version: str
    archive: str = ""  # downloaded wheel or sdist
    tree: str = ""  # unpacked folder holding <pkg>/
    scan: dict | None = None
    failed_stage: str = ""  # download | unpack | scan
    reason: str = ""
    seconds: float = 0.0


@dataclass
class Sweep:
    package: str
    releases: list[Release] = field(default_factory=list)
    stats: dict = field(default_factory=dict)


# -- versions ---------------------------------------------------------------------------------

def parse_spec(spec: str) -> tuple[str, str, str]:
    """``sglang==0.4.5..0.5.23`` -> (package, low, high); ``sglang==0.5.6`` -> one release."""
    match = _SPEC.match(spec)
    if not match:
        raise UsageError(f"{spec!r}: expected PACKAGE==LOW..HIGH (e.g. sglang==0.4.5..0.5.23)")
    package, low, high = match.group(1), match.group(2), match.group(3) or match.group(2)
    return package.lower(), low, high


def version_key(version: str):
    try:
        from packaging.version import Version

        return (0, Version(version))
    except Exception:  # not PEP 440, or packaging missing: numeric parts
        return (1, tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-+]", version)))


def _is_prerelease(version: str) -> bool:
    return bool(re.search(r"(a|b|rc|dev)\d*", version.split("+")[0].split(".post")[0]))


def available_versions(package: str, cache: Path) -> tuple[list[str], str]:
    """Versions on the index (pip index versions), else those already cached."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        match = re.search(r"Available versions:\s*(.+)", out.stdout)
        if match:
            return [v.strip() for v in match.group(1).split(",") if v.strip()], "index"
        problem = (out.stderr.strip().splitlines() or ["no versions listed"])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem = str(exc)
    cached = {_archive_version(p.name, package) for p in (cache / "wheels").glob(f"{package}-*")}
    cached.discard("")
    if not cached:
        raise UsageError(f"cannot list versions of {package}: {problem}")
    return sorted(cached, key=version_key), f"cache (index unavailable: {problem})"


def select_versions(versions: list[str], low: str, high: str) -> list[str]:
    lo, hi = version_key(low), version_key(high)
    keep_pre = _is_prerelease(low) or _is_prerelease(high)
    chosen = [v for v in versions if lo <= version_key(v) <= hi and (keep_pre or not _is_prerelease(v))]
    return sorted(set(chosen), key=version_key)


def _archive_version(name: str, package: str) -> str:
    stem = re.sub(r"\.(whl|tar\.gz|zip)$", "", name)
    if not stem.lower().startswith(package.lower() + "-"):
        return ""
    return stem[len(package) + 1:].split("-")[0]


# -- download and unpack ----------------------------------------------------------------------

def download(package: str, version: str, wheels: Path) -> tuple[str, str]:
    """(archive path, "") or ("", reason). A cached archive is reused."""
    existing = _cached_archive(package, version, wheels)
    if existing:
        return str(existing), ""
    wheels.mkdir(parents=True, exist_ok=True)
    reasons = []
    for how in (["--only-binary=:all:"], ["--no-binary=:all:", "--no-build-isolation"]):
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
               *how, f"{package}=={version}", "-d", str(wheels)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
            reasons.append((out.stderr.strip().splitlines() or [f"pip exited {out.returncode}"])[-1])
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(str(exc))
        existing = _cached_archive(package, version, wheels)
        if existing:
            return str(existing), ""
    return "", "; ".join(dict.fromkeys(r for r in reasons if r)) or "not downloaded"


def _cached_archive(package: str, version: str, wheels: Path) -> Path | None:
    names = {package, package.replace("-", "_")}
    for name in names:
        for pattern in (f"{name}-{version}-*.whl", f"{name}-{version}.tar.gz", f"{name}-{version}.zip"):
            found = sorted(wheels.glob(pattern))
            if found:
                return found[0]
    return None


def unpack(package: str, version: str, archive: str, cache: Path) -> str:
    """Unpack only ``<package>/**/*.py`` into ``cache/<package>-<version>``; reused when done."""
    target = cache / f"{package}-{version}"
    top = package.replace("-", "_")
    if (target / _UNPACKED_MARK).exists() or (target / top / "__init__.py").exists() and (
            target / top).is_dir() and not (target / ".partial").exists():
        return str(target)
    partial = cache / f".{package}-{version}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    pattern = re.compile(rf"^(?:[^/]+/)?(?:python/)?({re.escape(top)}/.*\.py)$")
    count = 0
    if archive.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                match = pattern.match(name) if not name.startswith(top + "/") else re.match(r"^(.*\.py)$", name)
                if match and ".." not in name:
                    dest = partial / match.group(1)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(zf.read(name))
                    count += 1
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                match = pattern.match(member.name)
                if match and member.isfile() and ".." not in member.name:
                    dest = partial / match.group(1)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    with tf.extractfile(member) as src:
                        dest.write_bytes(src.read())
                    count += 1
    if not count:
        shutil.rmtree(partial, ignore_errors=True)
        raise ValueError(f"{Path(archive).name} holds no {top}/**/*.py")
    (partial / _UNPACKED_MARK).write_text(f"{count} files from {Path(archive).name}\n")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    return str(target)


# -- scanning -----------------------------------------------------------------------------------

def _scan_job(args: tuple[str, str, list[str] | None, str]) -> tuple[str, dict | None, str, float]:
    version, tree, protocols, cache_dir = args
    started = time.perf_counter()
    try:
        from tracer.engine import scan_to_json

        data = scan_to_json(tree, protocols or None, cache_dir=cache_dir, jobs=1)
        return version, _compact(data), "", time.perf_counter() - started
    except Exception as exc:  # one bad release never stops the sweep
        return version, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - started


def _compact(data: dict) -> dict:
    """What the history needs from one scan (the full JSON is large)."""
    per_entry: dict[tuple[str, str], list[dict]] = {}
    for f in data["findings"]:
        for entry in f.get("entries") or ([f["entry"]] if f.get("entry") else []):
            per_entry.setdefault((entry, f["protocol"]), []).append(
                {"slug": f["slug"], "severity": f["severity"], "file": f["file"], "line": f["line"],
                 "message": f["message"]})
    return {
        "framework": data["framework"], "protocols": data["protocols"],
        "protocols_absent": data.get("protocols_absent", []), "stats": data["stats"],
        "models": [{"entry": m["entry"], "protocol": m["protocol"], "verdict": m["verdict"], "reason": m["reason"],
                    "state_owner": m["state_owner"],
                    "findings": per_entry.get((m["entry"], m["protocol"]), [])} for m in data["models"]],
        "runner_findings": [{"slug": f["slug"], "protocol": f["protocol"], "file": f["file"], "line": f["line"],
                             "message": f["message"]} for f in data["findings"] if not f.get("entry")],
    }


def run_sweep(spec: str, cache: Path, scan_cache: Path, jobs: int, protocols: list[str] | None = None,
              download_jobs: int = 4, log=lambda msg: None) -> Sweep:
    package, low, high = parse_spec(spec)
    started = time.perf_counter()
    versions, source = available_versions(package, cache)
    chosen = select_versions(versions, low, high)
    if not chosen:
        raise UsageError(f"no release of {package} between {low} and {high} ({source})")
    log(f"{len(chosen)} releases of {package} from {chosen[0]} to {chosen[-1]} ({source})")
    sweep = Sweep(package, [Release(v) for v in chosen])
    wheels = cache / "wheels"

    def fetch(release: Release) -> None:
        release.archive, why = download(package, release.version, wheels)
        if not release.archive:
            release.failed_stage, release.reason = "download", why
            return
        try:
            release.tree = unpack(package, release.version, release.archive, cache)
        except (OSError, ValueError, zipfile.BadZipFile, tarfile.TarError) as exc:
            release.failed_stage, release.reason = "unpack", str(exc)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, download_jobs)) as pool:
        for _ in as_completed([pool.submit(fetch, r) for r in sweep.releases]):
            pass
    fetched = time.perf_counter() - t0
    ready = [r for r in sweep.releases if r.tree]
    log(f"downloaded/unpacked {len(ready)} of {len(chosen)} in {fetched:.1f} s; scanning with {jobs} workers")

    t0 = time.perf_counter()
    by_version = {r.version: r for r in ready}
    # A worker scans a run of neighbouring releases, oldest first: neighbours share most
    # files, so after the run's first release it mostly hits the shared cache. Two runs
    # per worker, handed out as workers free up, even out runs of unequal cost.
    chunks = _chunks([r.version for r in ready], 2 * max(1, jobs), [_tree_weight(r.tree) for r in ready])
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(chunks)))) as pool:
        futures = [pool.submit(_scan_chunk, [(v, by_version[v].tree, protocols, str(scan_cache)) for v in chunk])
                   for chunk in chunks]
        for future in as_completed(futures):
            for version, data, error, seconds in future.result():
                release = by_version[version]
                release.seconds = round(seconds, 2)
                if data is None:
                    release.failed_stage, release.reason = "scan", error
                else:
                    release.scan = data
                log(f"  {version}: {'failed: ' + error if error else 'scanned'} ({seconds:.1f} s)")
    sweep.stats = {"releases": len(chosen), "scanned": sum(1 for r in sweep.releases if r.scan),
                   "failed": sum(1 for r in sweep.releases if r.failed_stage),
                   "download_seconds": round(fetched, 2), "scan_seconds": round(time.perf_counter() - t0, 2),
                   "total_seconds": round(time.perf_counter() - started, 2), "workers": jobs,
                   "versions_from": source}
    return sweep


def _chunks(items: list[str], count: int, weights: list[int] | None = None) -> list[list[str]]:
    """``items`` cut into at most ``count`` runs of neighbours of about equal total weight
    (later releases hold more files and take longer)."""
    count = max(1, min(count, len(items)))
    weights = weights or [1] * len(items)
    total = sum(weights) or 1
    chunks: list[list[str]] = [[]]
    running = 0
    for item, weight in zip(items, weights):
        if chunks[-1] and len(chunks) < count and running + weight / 2 > total * len(chunks) / count:
            chunks.append([])
        chunks[-1].append(item)
        running += weight
    return chunks


def _tree_weight(tree: str) -> int:
    mark = Path(tree) / _UNPACKED_MARK
    try:
        return int(mark.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return sum(1 for _ in Path(tree).rglob("*.py"))


def _scan_chunk(jobs: list[tuple[str, str, list[str] | None, str]]) -> list[tuple[str, dict | None, str, float]]:
    return [_scan_job(job) for job in jobs]


# -- history ------------------------------------------------------------------------------------

def _finding_key(f: dict) -> str:
    # file and slug, not the line: lines move between releases without meaning anything
    return f"{f['slug']} {f['file']}"


def build_history(sweep: Sweep) -> dict:
    scanned = [r for r in sweep.releases if r.scan]
    versions = [r.version for r in scanned]
    rows: dict[tuple[str, str], dict] = {}
    for release in scanned:
        for model in release.scan["models"]:
            key = (model["entry"], model["protocol"])
            row = rows.setdefault(key, {"entry": model["entry"], "protocol": model["protocol"], "cells": {}})
            row["cells"][release.version] = model
    models = []
    for (entry, protocol), row in sorted(rows.items()):
        verdicts, changes = {}, []
        previous = None  # (version, verdict, finding keys)
        for version in versions:
            model = row["cells"].get(version)
            verdict = model["verdict"] if model else "absent"
            verdicts[version] = verdict
            keys = {_finding_key(f): f for f in (model or {}).get("findings", [])}
            if previous is not None and previous[1] != verdict:
                changes.append({
                    "release": version, "previous_release": previous[0],
                    "from": previous[1], "to": verdict, "reason": model["reason"] if model else "",
                    "findings_appeared": [_brief(keys[k]) for k in sorted(set(keys) - set(previous[2]))],
                    "findings_disappeared": [_brief(previous[2][k]) for k in sorted(set(previous[2]) - set(keys))],
                })
            previous = (version, verdict, keys)
        latest = row["cells"].get(versions[-1]) if versions else None
        models.append({"entry": entry, "protocol": protocol, "verdicts": verdicts, "changes": changes,
                       "reasons": {v: m["reason"] for v, m in row["cells"].items() if m["reason"]},
                       "latest": latest["verdict"] if latest else "absent"})
    return {
        "tool": "tracer sweep", "package": sweep.package, "releases": versions,
        "failed": [{"release": r.version, "stage": r.failed_stage, "reason": r.reason}
                   for r in sweep.releases if r.failed_stage],
        "protocols": sorted({m["protocol"] for m in models}),
        "per_release": {r.version: {"seconds": r.seconds, "stats": r.scan["stats"],
                                    "protocols_absent": r.scan["protocols_absent"],
                                    "counts": _counts(r.scan["models"])} for r in scanned},
        "models": models, "stats": sweep.stats,
    }


def _real_changes(model: dict) -> list[dict]:
    return [c for c in model["changes"] if "absent" not in (c["from"], c["to"])]


def _brief(f: dict) -> dict:
    return {"slug": f["slug"], "file": f["file"], "line": f["line"], "message": f["message"]}


def _counts(models: list[dict]) -> dict:
    counts: dict[str, int] = {}
    for m in models:
        counts[m["verdict"]] = counts.get(m["verdict"], 0) + 1
    return counts


def history_text(history: dict) -> str:
    lines = [f"{history['package']}: {len(history['releases'])} releases scanned"
             + (f" ({history['releases'][0]} .. {history['releases'][-1]})" if history["releases"] else "")]
    for version in history["releases"]:
        counts = history["per_release"][version]["counts"]
        lines.append(f"  {version:<14} " + "  ".join(f"{k} {counts[k]}" for k in sorted(counts)))
    changed = [m for m in history["models"] if _real_changes(m)]
    lines.append("")
    lines.append(f"{len(changed)} of {len(history['models'])} entry x protocol chains changed verdict "
                 "(a model added or removed is not a change):")
    for model in changed:
        lines.append(f"{model['entry']} [{model['protocol']}]")
        for c in model["changes"]:
            if "absent" in (c["from"], c["to"]):
                lines.append(f"  {c['release']}: {'added' if c['from'] == 'absent' else 'removed'}"
                             + (f" ({c['to']})" if c["to"] != "absent" else ""))
                continue
            lines.append(f"  {c['previous_release']} -> {c['release']}: {c['from']} -> {c['to']}"
                         + (f"  ({c['reason']})" if c["reason"] and c["to"] in ("broken", "unknown") else ""))
            for f in c["findings_appeared"]:
                lines.append(f"    + {f['slug']} {f['file']}:{f['line']}")
            for f in c["findings_disappeared"]:
                lines.append(f"    - {f['slug']} {f['file']}:{f['line']}")
    if history["failed"]:
        lines.append("")
        lines.append("releases not scanned:")
        for f in history["failed"]:
            lines.append(f"  {f['release']}: {f['stage']} failed: {f['reason']}")
    stats = history["stats"]
    if stats:
        lines.append("")
        lines.append(f"download+unpack {stats.get('download_seconds')} s, scan {stats.get('scan_seconds')} s "
                     f"with {stats.get('workers')} workers, total {stats.get('total_seconds')} s")
    return "\n".join(lines) + "\n"


_GRID_CSS = """
.grid { border-collapse: collapse; font-size: 12px; }
.grid th, .grid td { border: 1px solid var(--line); padding: 2px 4px; }
.grid thead th { position: sticky; top: 0; background: #fff; writing-mode: vertical-rl; transform: rotate(180deg);
  font-weight: 500; white-space: nowrap; height: 90px; }
.grid th.model { writing-mode: horizontal-tb; transform: none; text-align: left; font-weight: 400;
  white-space: nowrap; position: sticky; left: 0; background: #fff; }
.grid td { width: 18px; height: 18px; text-align: center; cursor: default; }
.grid td.c-ok { background: var(--ok-bg); color: var(--ok); }
.grid td.c-broken { background: var(--broken-bg); color: var(--broken); }
.grid td.c-unknown { background: var(--unknown-bg); color: var(--unknown); }
.grid td.c-missing { background: var(--missing-bg); color: var(--missing); }
.grid td.c-absent { background: #fff; color: #bdc1c6; }
.grid td.change { box-shadow: inset 3px 0 0 var(--ink); font-weight: 700; }
.filters { margin: 10px 0; display: flex; gap: 14px; flex-wrap: wrap; align-items: center; }
.changes li { margin: 2px 0; }
.scroll { overflow: auto; max-height: 80vh; border: 1px solid var(--line); }
"""

_GRID_JS = """
document.querySelectorAll('input[name=rows]').forEach(function (box) {
  box.addEventListener('change', function () {
    var mode = document.querySelector('input[name=rows]:checked').value;
    document.querySelectorAll('tr.row').forEach(function (tr) {
      var show = mode === 'all' || (mode === 'changed' && tr.dataset.changed === '1')
        || (mode === 'supported' && tr.dataset.supported === '1');
      tr.style.display = show ? '' : 'none';
    });
  });
});
"""


def history_html(history: dict) -> str:
    try:
        from importlib import resources

        base_css = resources.files("tracer._reports").joinpath("report.css").read_text(encoding="utf-8")
    except Exception:  # pragma: no cover - the stylesheet ships with the package
        base_css = ""
    esc = html.escape
    versions = history["releases"]
    symbol = {"ok": "✓", "broken": "✗", "unknown": "?", "missing": "·", "absent": ""}
    rows = []
    for model in history["models"]:
        changed_at = {c["release"]: c for c in _real_changes(model)}
        supported = any(v not in ("missing", "absent") for v in model["verdicts"].values())
        cells = []
        for version in versions:
            verdict = model["verdicts"].get(version, "absent")
            title = f"{version}: {verdict}"
            reason = model["reasons"].get(version, "")
            if reason:
                title += f" — {reason}"
            change = changed_at.get(version)
            if change:
                title += f"\n(changed from {change['from']} in {change['previous_release']})"
                for f in change["findings_appeared"]:
                    title += f"\n+ {f['slug']} {f['file']}:{f['line']}"
                for f in change["findings_disappeared"]:
                    title += f"\n- {f['slug']} {f['file']}:{f['line']}"
            cls = f"c-{verdict}" + (" change" if change else "")
            cells.append(f'<td class="{cls}" title="{esc(title)}">{symbol.get(verdict, "")}</td>')
        short = model["entry"].rsplit(".", 1)[-1]
        rows.append(
            f'<tr class="row" data-changed="{1 if _real_changes(model) else 0}" data-supported="{1 if supported else 0}">'
            f'<th class="model" title="{esc(model["entry"])}">{esc(short)} <span class="tag">{esc(model["protocol"])}</span></th>'
            + "".join(cells) + "</tr>")
    head = "".join(f"<th>{esc(v)}</th>" for v in versions)
    changes = []
    for model in history["models"]:
        for c in model["changes"]:
            if c["from"] == "absent" or c["to"] == "absent":
                continue
            items = "".join(f"<li><code>+ {esc(f['slug'])}</code> {esc(f['file'])}:{f['line']} {esc(f['message'])}</li>"
                            for f in c["findings_appeared"])
            items += "".join(f"<li><code>- {esc(f['slug'])}</code> {esc(f['file'])}:{f['line']}</li>"
                             for f in c["findings_disappeared"])
            changes.append(
                f'<li><b>{esc(model["entry"].rsplit(".", 1)[-1])}</b> <span class="tag">{esc(model["protocol"])}</span> '
                f'{esc(c["previous_release"])} → {esc(c["release"])}: '
                f'<span class="badge v-{esc(c["from"])}">{esc(c["from"])}</span> → '
                f'<span class="badge v-{esc(c["to"])}">{esc(c["to"])}</span>'
                + (f"<ul>{items}</ul>" if items else "") + "</li>")
    failed = "".join(f"<li>{esc(f['release'])}: {esc(f['stage'])} failed — {esc(f['reason'])}</li>"
                     for f in history["failed"])
    n_changed = sum(1 for m in history["models"] if _real_changes(m))
    span = f"{versions[0]} … {versions[-1]}" if versions else "no release"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>tracer sweep — {esc(history['package'])} {esc(span)}</title>
<style>{base_css}{_GRID_CSS}</style></head>
<body><div class="top"><div class="wrap"><span class="brand">tracer</span><span class="crumbs">sweep</span></div></div>
<div class="wrap">
<h1>{esc(history['package'])} <small>{len(versions)} releases, {esc(span)}</small></h1>
<p class="sub">Verdict of every entry class × protocol in every release. A bold left edge marks the release
where the verdict changed; hover a cell for the reason and the findings that appeared or disappeared.
✓ ok · ✗ broken · ? unknown · · missing (no setter) · blank: not in that release.</p>
{f'<div class="notice bad"><b>Releases not scanned</b><ul>{failed}</ul></div>' if failed else ''}
<div class="filters"><b>Rows</b>
<label><input type="radio" name="rows" value="changed" checked> changed ({n_changed})</label>
<label><input type="radio" name="rows" value="supported"> supported in some release</label>
<label><input type="radio" name="rows" value="all"> all ({len(history['models'])})</label></div>
<div class="scroll"><table class="grid"><thead><tr><th class="model">entry class</th>{head}</tr></thead>
<tbody>{''.join(rows)}</tbody></table></div>
<h2>Verdict changes</h2><ul class="changes">{''.join(changes) or '<li>none</li>'}</ul>
<div class="foot">tracer sweep · scan {history['stats'].get('scan_seconds')} s with {history['stats'].get('workers')} workers</div>
</div><script>{_GRID_JS}
document.querySelector('input[name=rows]:checked').dispatchEvent(new Event('change'));</script></body></html>
"""


def write_history(history: dict, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "history.json", "text": out / "history.txt", "html": out / "index.html"}
    paths["json"].write_text(json.dumps(history, indent=1) + "\n", encoding="utf-8")
    paths["text"].write_text(history_text(history), encoding="utf-8")
    paths["html"].write_text(history_html(history), encoding="utf-8")
    return paths


def default_download_cache() -> Path:
    return Path(os.environ.get("TRACER_TEST_CACHE", Path.home() / ".cache" / "tracer-test"))


@click.command("sweep")
@click.argument("spec")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for history.json, history.txt and index.html.")
@click.option("--download-cache", type=click.Path(file_okay=False), help="Where releases are downloaded and unpacked (default $TRACER_TEST_CACHE or ~/.cache/tracer-test).")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Summary cache shared by the workers (default: <download cache>/summaries).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Scanning worker processes (default: CPU count).")
@click.option("--protocol", "protocols", multiple=True, help="Protocol pack to apply (default: all that fit each release).")
def sweep_command(spec, out_dir, download_cache, cache_dir, jobs, protocols):
    """Scan every release in a range (SPEC: PACKAGE==LOW..HIGH, from PyPI) and write
    the history of each model's verdict: text, JSON and an HTML grid."""
    cache = Path(download_cache) if download_cache else default_download_cache()
    scan_cache = Path(cache_dir) if cache_dir else cache / "summaries"
    def log(msg: str) -> None:
        click.echo(msg, err=True)

    sweep = run_sweep(spec, cache, scan_cache, jobs or (os.cpu_count() or 1), list(protocols) or None, log=log)
    history = build_history(sweep)
    paths = write_history(history, Path(out_dir))
    click.echo(history_text(history), nl=False)
    click.echo(f"wrote {paths['text']}, {paths['json']}, {paths['html']}", err=True)
    if not history["releases"]:
        sys.exit(2)
