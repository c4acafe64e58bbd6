"""Shared fixtures: real SGLang releases downloaded from PyPI into a cache.

The cache folder is $TRACER_TEST_CACHE, else ~/.cache/tracer-test. Nothing of
SGLang is committed; a release is downloaded once (`pip download --no-deps`)
and its `sglang/` package unpacked next to the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

RELEASES = ["0.4.9", "0.5.6", "0.5.16", "0.5.23"]


def cache_root() -> Path:
    return Path(os.environ.get("TRACER_TEST_CACHE", Path.home() / ".cache" / "tracer-test"))


def release_dir(version: str) -> Path:
    """Unpacked release folder (holding sglang/), downloading it when needed."""
    root = cache_root()
    target = root / f"sglang-{version}"
    if (target / "sglang" / "srt" / "models").is_dir():
        return target
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               f"sglang=={version}", "-d", str(wheels)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        found = sorted(wheels.glob(f"sglang-{version}-*.whl"))
        if not found:
            pytest.skip(f"cannot download sglang=={version}: {result.stderr.strip()[-300:]}")
    with zipfile.ZipFile(found[0]) as wheel:
        members = [m for m in wheel.namelist() if m.startswith("sglang/") and m.endswith(".py")]
        wheel.extractall(target, members)
    return target


@pytest.fixture(scope="session")
def sglang_release():
    return release_dir


@pytest.fixture(scope="session")
def scanned_release(tmp_path_factory):
    """version -> scan JSON (one scan per release per session)."""
    from tracer.engine import scan_to_json

    results: dict[str, dict] = {}
    cache = tmp_path_factory.mktemp("scan-cache")

    def get(version: str) -> dict:
        if version not in results:
            results[version] = scan_to_json(str(release_dir(version)), cache_dir=str(cache))
        return results[version]

    return get
