"""Real framework releases from PyPI, downloaded and unpacked into a test cache.

The cache folder is $TRACER_TEST_CACHE, else ~/.cache/tracer-test. Nothing of
SGLang or vLLM is committed. A wheel is downloaded once (`pip download
--no-deps --only-binary=:all:`, never an sdist: building one would run its
setup.py) into ``wheels/``, and unpacked next to it in one of two ways:

* ``python`` — only the package's ``*.py`` files: all the static tool reads;
* ``full``   — every file of the package (the verify harness imports the
  release, and SGLang refuses to import without its JIT kernel folders,
  ``include/`` and ``csrc/``).

Each unpacked folder carries a stamp (the unpack rule's version, the wheel's
name and SHA-256, the member count). A folder whose stamp does not match (one
filled by an older rule, an interrupted unpack, a different wheel) is removed
and unpacked again, never trusted. Unpacking goes to a temporary folder that is
renamed into place, under a file lock, so concurrent test workers never see a
half-written tree.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# Bump when what an unpack contains changes: every older folder is then refreshed.
UNPACK_RULE = 2
STAMP = ".tracer-unpack.json"


class ReleaseUnavailable(Exception):
    """The release could not be downloaded (PyPI out of reach, no wheel)."""


def cache_root() -> Path:
    return Path(os.environ.get("TRACER_TEST_CACHE", Path.home() / ".cache" / "tracer-test"))


@contextlib.contextmanager
def _locked(root: Path):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel_file(package: str, version: str) -> Path:
    """The downloaded wheel of ``package==version`` (downloaded on first use)."""
    wheels = cache_root() / "wheels"
    with _locked(cache_root()):
        found = sorted(wheels.glob(f"{package}-{version}-*.whl"))
        if not found:
            wheels.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                   f"{package}=={version}", "-d", str(wheels)]
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
            found = sorted(wheels.glob(f"{package}-{version}-*.whl"))
            if not found:
                raise ReleaseUnavailable(f"cannot download {package}=={version}: {result.stderr.strip()[-300:]}")
    return found[0]


def release_dir(version: str, package: str = "sglang", full: bool = False) -> Path:
    """Folder holding ``<package>/`` of the release: its .py files, or every file with ``full``."""
    wheel = wheel_file(package, version)
    kind = "full" if full else "python"
    target = cache_root() / f"{package}-{version}-{kind}"
    with _locked(cache_root()):
        wanted = {"rule": UNPACK_RULE, "kind": kind, "wheel": wheel.name, "sha256": _sha256(wheel)}
        stamp = target / STAMP
        try:
            have = json.loads(stamp.read_text())
        except (OSError, ValueError):
            have = None
        if isinstance(have, dict) and all(have.get(k) == v for k, v in wanted.items()):
            return target
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(f"{package}/")
                       and not m.endswith("/") and (full or m.endswith(".py"))]
            partial = target.with_name(target.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            archive.extractall(partial, members)
        (partial / STAMP).write_text(json.dumps(dict(wanted, members=len(members))))
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target


if __name__ == "__main__":  # python tests/releases.py sglang 0.5.23 [--full]: prefetch
    args = [a for a in sys.argv[1:] if a != "--full"]
    print(release_dir(args[1], args[0], full="--full" in sys.argv))
