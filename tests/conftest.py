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
def scanned_release(tmp_path_factory):
    """version -> scan JSON (one scan per release per session)."""
    from tracer.api import scan_to_json

    results: dict[str, dict] = {}
    cache = tmp_path_factory.mktemp("scan-cache")

    def get(version: str) -> dict:
        if version not in results:
            results[version] = scan_to_json(str(release_dir(version)), cache_dir=str(cache))
        return results[version]

    return get
