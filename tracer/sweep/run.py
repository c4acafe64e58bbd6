"""Scanning every release of a range in parallel worker processes that share one
summary cache (a file unchanged between releases is parsed once). A release that
cannot be downloaded, unpacked or scanned is listed with the reason; the others stand."""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from tracer.api import scan_tree
from tracer.model.errors import UsageError
from tracer.model.results import ScanResult
from tracer.present.scan_json import stats_to_json
from tracer.sweep.fetch import available_versions, download, parse_spec, select_versions, unpack, unpacked_from


@dataclass
class Release:
    version: str
    archive: str = ""  # downloaded wheel or sdist
    sha256: str = ""  # of the archive, as scanned
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


def _scan_job(args: tuple[str, str, list[str] | None, str]) -> tuple[str, dict | None, str, float]:
    version, tree, protocols, cache_dir = args
    started = time.perf_counter()
    try:
        result = scan_tree(tree, protocols or None, cache_dir=cache_dir, jobs=1).result
        return version, _compact(result), "", time.perf_counter() - started
    except Exception as exc:  # one bad release never stops the sweep
        return version, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - started


def _compact(result: ScanResult) -> dict:
    """What the history needs from one scan (the full result is large, and crosses
    a process boundary)."""
    per_entry: dict[tuple[str, str], list[dict]] = {}
    for f in result.findings:
        for entry in f.entries or ((f.entry,) if f.entry else ()):
            per_entry.setdefault((entry, f.protocol), []).append(
                {"slug": f.slug, "severity": f.severity, "file": f.file, "line": f.line, "message": f.message})
    return {
        "framework": {"name": result.framework.name, "version": result.framework.version,
                      "package_root": result.framework.package_root},
        "protocols": list(result.protocols), "protocols_absent": list(result.absent_protocols),
        "stats": stats_to_json(result.stats),
        "models": [{"entry": m.entry, "protocol": m.protocol, "verdict": m.verdict, "reason": m.reason,
                    "state_owner": m.state_owner, "findings": per_entry.get((m.entry, m.protocol), [])}
                   for m in result.models],
        "runner_findings": [{"slug": f.slug, "protocol": f.protocol, "file": f.file, "line": f.line,
                             "message": f.message} for f in result.findings if not f.entry],
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
        # any failure is this release's, never the sweep's, and is listed with its reason
        try:
            release.archive, why = download(package, release.version, wheels)
        except Exception as exc:  # noqa: BLE001
            release.archive, why = "", f"{type(exc).__name__}: {exc}"
        if not release.archive:
            release.failed_stage, release.reason = "download", why or "not downloaded"
            return
        try:
            release.tree = unpack(package, release.version, release.archive, cache)
            release.sha256 = (unpacked_from(Path(release.tree)) or {}).get("sha256", "")
        except Exception as exc:  # noqa: BLE001
            release.tree = ""
            release.failed_stage, release.reason = "unpack", f"{type(exc).__name__}: {exc}"

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, download_jobs)) as pool:
        for done in as_completed([pool.submit(fetch, r) for r in sweep.releases]):
            done.result()  # fetch catches everything; an escape here is a bug worth seeing
    fetched = time.perf_counter() - t0
    ready = [r for r in sweep.releases if r.tree]
    log(f"downloaded/unpacked {len(ready)} of {len(chosen)} in {fetched:.1f} s; scanning with {jobs} workers")

    t0 = time.perf_counter()
    by_version = {r.version: r for r in ready}
    # A worker scans a run of neighbouring releases, oldest first: neighbours share most
    # files, so after the run's first release it mostly hits the shared cache. Two runs
    # per worker, handed out as workers free up, even out runs of unequal cost.
    chunks = _chunks([r.version for r in ready], 2 * max(1, jobs), [_tree_weight(r.tree) for r in ready])
    def job(version: str) -> tuple[str, str, list[str] | None, str]:
        return version, by_version[version].tree, protocols, str(scan_cache)

    retry: list[str] = []
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(chunks)))) as workers:
        futures = [workers.submit(_scan_chunk, [job(v) for v in chunk]) for chunk in chunks]
        for future, chunk in zip(futures, chunks):
            try:
                outcomes = future.result()
            except Exception:  # noqa: BLE001 - a worker died (BrokenProcessPool breaks every pending chunk)
                retry.extend(chunk)
                continue
            for version, data, error, seconds in outcomes:
                release = by_version[version]
                release.seconds = round(seconds, 2)
                if data is None:
                    release.failed_stage, release.reason = "scan", error
                else:
                    release.scan = data
                log(f"  {version}: {'failed: ' + error if error else 'scanned'} ({seconds:.1f} s)")
    # The releases of the chunks a dead worker took down, each in a process of its own:
    # the one that kills its process is listed as failed, the others are scanned.
    for version in retry:
        version, data, error, seconds = _scan_isolated(job(version))
        release = by_version[version]
        release.seconds = round(seconds, 2)
        if data is None:
            release.failed_stage, release.reason = "scan", error
        else:
            release.scan = data
        log(f"  {version}: {'failed: ' + error if error else 'scanned'} ({seconds:.1f} s, alone)")
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
    files = (unpacked_from(Path(tree)) or {}).get("files")
    return files if isinstance(files, int) else sum(1 for _ in Path(tree).rglob("*.py"))


def _scan_isolated(job: tuple[str, str, list[str] | None, str]) -> tuple[str, dict | None, str, float]:
    started = time.perf_counter()
    try:
        with ProcessPoolExecutor(max_workers=1) as alone:
            return alone.submit(_scan_chunk, [job]).result()[0]
    except Exception as exc:  # noqa: BLE001 - this release kills its process: its failure alone
        return job[0], None, f"the scanning process died ({type(exc).__name__}: a native crash or out of memory)", \
            time.perf_counter() - started


def _scan_chunk(jobs: list[tuple[str, str, list[str] | None, str]]) -> list[tuple[str, dict | None, str, float]]:
    return [_scan_job(job) for job in jobs]
