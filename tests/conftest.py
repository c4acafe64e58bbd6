"""Shared fixtures: real SGLang and vLLM releases downloaded from PyPI into a
cache (tests/releases.py says where and how), scanned once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import releases
from releases import ReleaseUnavailable, cache_root  # noqa: F401 (used by test modules)

# Subprocesses (`python -m tracer`) find the checkout's tracer too: the suite runs from a
# plain clone, without `pip install -e` (pytest's own `pythonpath` setting covers this process).
REPO = Path(__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)

RELEASES = ["0.4.9", "0.5.6", "0.5.16", "0.5.23"]


def release_dir(version: str, package: str = "sglang", full: bool = False):
    """Unpacked release folder (holding sglang/ or vllm/); skips when PyPI is out of reach."""
    try:
        return releases.release_dir(version, package, full)
    except ReleaseUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def sglang_release():
    """version -> folder with the release's .py files (what the static tool reads)."""
    return release_dir


@pytest.fixture(scope="session")
def sglang_release_full():
    """version -> folder with every file of the release (what importing it needs)."""
    return lambda version: release_dir(version, full=True)


@pytest.fixture(scope="session")
def release_cache(tmp_path_factory) -> Path:
    """One tracer cache folder (summaries, parsed files, scan results, solved graphs) for
    the scans and graphs of unmodified releases, shared by every test and both xdist
    workers of this run and by nothing else: it is made under the run's own base temp
    folder, so each run starts cold (a tracer edit never meets an older run's entries).
    The cache's writes are atomic (tracer/index/cache.py), so concurrent workers are safe;
    what it saves is the second and later scan of the same release (vLLM 0.33.0 was
    scanned cold by five tests)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the controller's folder: popen-gw0 and popen-gw1 live in it
    path = base / "release-cache"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def scanned_release(release_cache):
    """version -> scan JSON (one scan per release per session)."""
    from tracer.api import scan_to_json

    results: dict[str, dict] = {}
    cache = release_cache

    def get(version: str) -> dict:
        if version not in results:
            results[version] = scan_to_json(str(release_dir(version)), cache_dir=str(cache))
        return results[version]

    return get


# Session and module fixtures that cost nothing to set up: they do not pin their tests to a worker.
_FREE_FIXTURES = {"release_cache", "sglang_release", "sglang_release_full"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the groups into node ids
def pytest_collection_modifyitems(config, items):
    """Tests of one module that share a module- or session-scoped fixture of this folder (a
    scan, a graph, a verify run of a release) run on one xdist worker (`--dist loadgroup` in
    pyproject.toml). xdist's default `load` sends runs of consecutive tests, smaller ones as the
    run ends: a run's boundary inside such a module makes both workers set the fixture up (the
    60-second verify run of SGLang 0.5.23, the session's srt graph); a group never splits.

    The `real` tests are handed out first (a stable sort: the order within each part is kept):
    the longest ones (verify --all, the binder's differential, up to a minute and a half each)
    then start early and the many short tests fill the end, rather than one worker running a
    long test alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("real") is None)
    here = str(Path(__file__).resolve().parent)
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name)
            if not defs or name in _FREE_FIXTURES or defs[-1].scope == "function":
                continue
            code = getattr(defs[-1].func, "__code__", None)
            if code is not None and code.co_filename.startswith(here):
                item.add_marker(pytest.mark.xdist_group(item.path.stem))
                break
