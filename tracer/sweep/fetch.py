"""Releases from PyPI as data: list versions, download a wheel (or fetch the sdist
file), unpack only ``<pkg>/**/*.py``. Nothing downloaded is ever built or run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tracer.model.errors import UsageError

_SPEC = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*==\s*([^.\s][^\s]*?)\s*(?:\.\.\s*([^\s]+))?\s*$")


_UNPACKED_MARK = ".tracer-unpacked"


def parse_spec(spec: str) -> tuple[str, str, str]:
    """``sglang==0.4.5..0.5.23`` -> (package, low, high); ``sglang==0.5.6`` -> one release."""
    match = _SPEC.match(spec)
    if not match:
        raise UsageError(f"{spec!r}: expected PACKAGE==LOW..HIGH (e.g. mypkg==1.0..1.4)")
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


def download(package: str, version: str, wheels: Path) -> tuple[str, str]:
    """(archive path, "") or ("", reason). A cached archive is reused."""
    existing = _cached_archive(package, version, wheels)
    if existing:
        return str(existing), ""
    wheels.mkdir(parents=True, exist_ok=True)
    reasons = []
    # A wheel is data; pip never builds anything for --only-binary.
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q",
           "--only-binary=:all:", f"{package}=={version}", "-d", str(wheels)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        reasons.append((out.stderr.strip().splitlines() or [f"pip exited {out.returncode}"])[-1])
    except (OSError, subprocess.TimeoutExpired) as exc:
        reasons.append(str(exc))
    existing = _cached_archive(package, version, wheels)
    if existing:
        return str(existing), ""
    # No wheel fits: the source distribution, fetched as a file and never prepared by
    # pip (preparing metadata runs the sdist's setup.py, i.e. a stranger's code).
    try:
        return str(fetch_sdist(package, version, wheels)), ""
    except (OSError, ValueError) as exc:
        reasons.append(f"sdist: {exc}")
    return "", "; ".join(dict.fromkeys(r for r in reasons if r)) or "not downloaded"


def fetch_sdist(package: str, version: str, wheels: Path, index: str = "https://pypi.org/pypi") -> Path:
    """The release's .tar.gz or .zip, by PyPI's JSON API, checked against its SHA-256."""
    import hashlib
    import json
    import urllib.request

    with urllib.request.urlopen(f"{index}/{package}/{version}/json", timeout=60) as response:  # noqa: S310
        meta = json.loads(response.read(16 * 1024 * 1024))
    files = [u for u in meta.get("urls", []) if u.get("packagetype") == "sdist"]
    if not files:
        raise ValueError("no wheel for this platform and no source distribution")
    chosen = files[0]
    name = Path(chosen["filename"]).name
    if not name.endswith((".tar.gz", ".zip")) or "/" in name:
        raise ValueError(f"unexpected source distribution name {name!r}")
    with urllib.request.urlopen(chosen["url"], timeout=600) as response:  # noqa: S310
        data = response.read(1024 * 1024 * 1024)
    want = (chosen.get("digests") or {}).get("sha256")
    if want and hashlib.sha256(data).hexdigest() != want:
        raise ValueError(f"{name}: SHA-256 does not match the index")
    target = wheels / name
    tmp = target.with_name("." + name + ".part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


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
        # members are read as data one by one; names that leave the folder are skipped
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
                    src = tf.extractfile(member)
                    if src is None:
                        continue
                    with src:
                        dest.write_bytes(src.read())
                    count += 1
    if not count:
        shutil.rmtree(partial, ignore_errors=True)
        raise ValueError(f"{Path(archive).name} holds no {top}/**/*.py")
    (partial / _UNPACKED_MARK).write_text(f"{count} files from {Path(archive).name}\n")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    return str(target)


def default_download_cache() -> Path:
    return Path(os.environ.get("TRACER_TEST_CACHE", Path.home() / ".cache" / "tracer-test"))
