"""Releases from PyPI as data: list versions, download a wheel (or fetch the sdist
file), unpack only ``<pkg>/**/*.py``. Nothing downloaded is ever built or run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

from tracer.model.errors import UsageError
from tracer.safeio.auth import load_entry, store_entry
from tracer.safeio.write import write_bytes
from tracer.sweep.index import PipSettings, pip_command, pip_settings, read_url, sdist_candidates

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
    cmd = pip_command("index", "versions", package, "--disable-pip-version-check")
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


_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_\-]*$")  # a version names a folder: no '/' or '..'


def select_versions(versions: list[str], low: str, high: str) -> list[str]:
    versions = [v for v in versions if _VERSION.match(v) and ".." not in v]
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
    cmd = pip_command("download", "--no-deps", "--disable-pip-version-check", "-q",
                      "--only-binary=:all:", f"{package}=={version}", "-d", str(wheels))
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


MAX_SDIST_BYTES = 1024 * 1024 * 1024


def fetch_sdist(package: str, version: str, wheels: Path, settings: PipSettings | None = None) -> Path:
    """The release's .tar.gz or .zip from the indexes pip is configured with (index URL,
    extra index URLs, find-links, trusted hosts, proxy, CA bundle; ``no-index`` asks none),
    checked against the SHA-256 the index gives. Fetched as a file; pip never sees it
    (preparing an sdist runs its setup.py)."""
    settings = settings or pip_settings()
    candidates, problems = sdist_candidates(package, version, settings)
    for name, url, want in candidates:
        try:
            data, _, _ = read_url(url, settings, MAX_SDIST_BYTES)
        except (OSError, ValueError) as exc:
            problems.append(f"{url}: {exc}")
            continue
        if want and hashlib.sha256(data).hexdigest() != want.lower():
            problems.append(f"{name}: SHA-256 does not match the index")
            continue
        return write_bytes(wheels / Path(name).name, data, wheels)  # temp + rename, never through a link
    where = ", ".join(settings.index_urls) if not settings.no_index else "no index (pip: no-index)"
    raise ValueError(f"no wheel for this platform and no source distribution on {where}"
                     + (f" ({'; '.join(problems[:3])})" if problems else ""))


def _cached_archive(package: str, version: str, wheels: Path) -> Path | None:
    names = {package, package.replace("-", "_")}
    for name in names:
        for pattern in (f"{name}-{version}-*.whl", f"{name}-{version}.tar.gz", f"{name}-{version}.zip"):
            found = sorted(wheels.glob(pattern))
            if found:
                return found[0]
    return None


UNPACK_RULE = "3"  # bump when what unpack() keeps changes: older folders are unpacked again
MAX_MEMBER_BYTES = 64 * 1024 * 1024  # a .py member bigger than this is refused (the scan parses 1 MiB at most)
MAX_UNPACKED_BYTES = 2 * 1024 * 1024 * 1024  # all members together, whatever the archive
# Python sources compress ~4x (SGLang 0.5.23: a 37 MiB wheel holds 65 MiB of .py; 0.4.9: 1.5 MiB, 5 MiB):
# more than this per archive byte is a zip bomb, refused before it fills the download cache.
UNPACKED_PER_ARCHIVE_BYTE = 16
UNPACKED_FLOOR = 64 * 1024 * 1024


def unpack_bound(archive: str | Path) -> int:
    """The most bytes one release may unpack to: 64 MiB + 16 x its archive, at most 2 GiB."""
    return min(MAX_UNPACKED_BYTES, UNPACKED_FLOOR + UNPACKED_PER_ARCHIVE_BYTE * os.path.getsize(archive))


def archive_sha256(archive: str | Path) -> str:
    digest = hashlib.sha256()
    with open(archive, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(folder: Path) -> str | None:
    """SHA-256 over every file under ``folder`` (sorted relative path, size, SHA-256 of the
    bytes), the marker aside; None when the folder holds anything unpack() never writes (a
    link, a FIFO, a device): such a folder is not as it was unpacked."""
    entries = []
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as listing:
                children = sorted(listing, key=lambda e: e.name)
        except OSError:
            return None
        for entry in children:
            if entry.is_symlink():
                return None
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
                continue
            if not entry.is_file(follow_symlinks=False):
                return None
            relative = os.path.relpath(entry.path, folder).replace(os.sep, "/")
            if relative == _UNPACKED_MARK:
                continue
            digest, size = hashlib.sha256(), 0
            try:
                with open(entry.path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                        size += len(block)
            except OSError:
                return None
            entries.append(f"{relative}\0{size}\0{digest.hexdigest()}")
    return hashlib.sha256("\n".join(sorted(entries)).encode("utf-8", "surrogateescape")).hexdigest()


def _marker(archive_name: str, sha256: str, count: int, tree: str) -> bytes:
    return json.dumps({"rule": UNPACK_RULE, "archive": archive_name, "sha256": sha256, "files": count,
                       "tree": tree}).encode()


def unpacked_from(target: Path) -> dict | None:
    """What an unpacked folder's marker says (authenticated), or None: not ours, or stale."""
    payload = load_entry(target / _UNPACKED_MARK, target, 64 * 1024)
    try:
        mark = json.loads(payload) if payload is not None else None
    except (ValueError, RecursionError):
        return None
    return mark if isinstance(mark, dict) and mark.get("rule") == UNPACK_RULE else None


def unpack(package: str, version: str, archive: str, cache: Path) -> str:
    """Unpack only ``<package>/**/*.py`` into ``cache/<package>-<version>``, as data.

    A folder is reused only when its authenticated marker names this archive's SHA-256,
    the current unpack rule and the digest of the files now under it (a file edited,
    added or removed in the cache, or a folder left by an older rule, another archive or
    anyone else, is unpacked again, never trusted). Members are read one by one, bounded
    (``unpack_bound``: a bomb is refused and its archive and partial folder removed); names
    that leave the folder, links and devices are skipped."""
    target = cache / f"{package}-{version}"
    top = package.replace("-", "_")
    sha256 = archive_sha256(archive)
    mark = unpacked_from(target)
    if mark is not None and mark.get("sha256") == sha256 and mark.get("tree") == tree_digest(target):
        return str(target)
    partial = cache / f".{package}-{version}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    pattern = re.compile(rf"^(?:[^/]+/)?(?:python/)?({re.escape(top)}/.*\.py)$")
    count = total = 0
    bound = unpack_bound(archive)

    def keep(relative: str, name: str, size: int, read) -> None:
        nonlocal count, total
        if size > MAX_MEMBER_BYTES:
            raise BombError(f"{name}: {size} bytes; members over {MAX_MEMBER_BYTES >> 20} MiB are refused")
        if total + size > bound:
            raise BombError(f"{Path(archive).name} unpacks to more than {bound >> 20} MiB (a zip bomb?); refused")
        data = read(MAX_MEMBER_BYTES + 1)
        total += len(data)
        if len(data) > MAX_MEMBER_BYTES or total > bound:
            raise BombError(f"{name}: unpacks to more than its bound (a zip bomb?)")
        write_bytes(partial / relative, data, partial)  # never through a link
        count += 1

    try:
        if archive.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    name = info.filename
                    match = pattern.match(name) if not name.startswith(top + "/") else re.match(r"^(.*\.py)$", name)
                    if not match or ".." in name.split("/") or info.is_dir() or name.startswith("/"):
                        continue
                    if (info.external_attr >> 16) & 0o170000 not in (0, 0o100000):
                        continue  # a link or a device stored in the zip
                    with zf.open(info) as stream:
                        keep(match.group(1), name, info.file_size, stream.read)
        else:
            with tarfile.open(archive) as tf:
                for member in tf:
                    match = pattern.match(member.name)
                    if not match or not member.isfile() or ".." in member.name.split("/"):
                        continue
                    src = tf.extractfile(member)
                    if src is None:
                        continue
                    with src:
                        keep(match.group(1), member.name, member.size, src.read)
        if not count:
            raise ValueError(f"{Path(archive).name} holds no {top}/**/*.py")
        tree = tree_digest(partial)
        if tree is None or not store_entry(partial / _UNPACKED_MARK, partial, _marker(Path(archive).name, sha256, count, tree)):
            raise OSError(f"cannot write {partial / _UNPACKED_MARK}")
    except BombError:
        shutil.rmtree(partial, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.unlink(archive)  # the download cache keeps no bomb
        raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    return str(target)


class BombError(ValueError):
    """An archive that unpacks past its bound."""


def default_download_cache() -> Path:
    return Path(os.environ.get("TRACER_TEST_CACHE", Path.home() / ".cache" / "tracer-test"))
