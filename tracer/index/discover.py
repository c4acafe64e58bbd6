"""Find the framework inside a path and list its Python files (no parsing)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from tracer.index.source import is_within as _is_within
from tracer.index.source import read_regular_file
from tracer.model.errors import UsageError
from tracer.model.protocol import Protocol
from tracer.model.tree import Layout, SourceFile

__all__ = ["Layout", "SourceFile", "UsageError", "detect_layout", "list_plugin_sources", "list_sources"]


def detect_layout(path: str | Path, protocols: list[Protocol]) -> Layout:
    """Where the framework's package lives under ``path``; UsageError if nowhere."""
    root = Path(path)
    if not root.exists():
        raise UsageError(f"{path}: no such file or directory")
    if not root.is_dir():
        raise UsageError(f"{path}: not a directory (give the folder of a framework checkout or unpacked wheel)")
    root = root.resolve()
    for proto in protocols:
        package = proto.package
        for marker in proto.markers:
            parts = Path(marker).parts
            # The root may itself be a folder of the marker's path (the user gave
            # sglang/srt for "srt/models"): `top` is where the marker starts.
            top = None
            for k in range(len(parts)):
                if k and tuple(root.parts[-k:]) != parts[:k]:
                    continue
                if root.joinpath(*parts[k:]).is_dir():
                    top = root.parents[k - 1] if k else root
                    break
            if top is None:
                continue
            # marker "a/b/<package>/srt/models": the base is the folder above <package>
            if package in parts:
                base = top.joinpath(*parts[: parts.index(package)])
            else:
                # marker relative to the package's inside ("srt/models"): the root is
                # a folder inside the package; climb to the folder above the package.
                base = top
                depth = 0
                while base.name != package and base.parent != base and depth < 4:
                    base, depth = base.parent, depth + 1
                if base.name != package:
                    continue
                base = base.parent
            return Layout(root, base, package, _version(base / package, root), proto.framework, proto.fork_of)
    return _detect_fork(path, root, protocols)


def _package_dirs(root: Path) -> list[Path]:
    """Folders that may be a framework's top package: the root itself, its children (an
    unpacked wheel), those of python/ and src/ (checkouts), and the root's parents when the
    root lies inside a package (the user gave PKG/srt)."""
    found: list[Path] = [root]
    for holder in (root, root / "python", root / "src"):
        try:
            found += sorted(p for p in holder.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        except OSError:
            continue
    found += [p for p in root.parents[:3]]
    return [p for p in found if p.name.isidentifier() and (p / "__init__.py").is_file()]


def _module_file(top: Path, module: str) -> bool:
    """Does ``module`` (dotted, starting with the package's name) exist under ``top``?"""
    parts = module.split(".")[1:]
    here = top.joinpath(*parts) if parts else top
    return here.with_suffix(".py").is_file() or (here / "__init__.py").is_file()


def _shapes(proto: Protocol, top: Path) -> tuple[list[str], list[str]]:
    """What of the pack's structure a package folder holds and lacks (beyond the marker):
    its registry module, the modules of its runner's roots."""
    moved = proto.relocated(top.name)
    wanted = [moved.registry_module] if moved.registry_module else []
    for dotted in moved.runner_roots:
        root = dotted.split(".")
        module = next((".".join(root[:k]) for k in range(len(root) - 1, 1, -1)
                       if _module_file(top, ".".join(root[:k]))), ".".join(root[:-2]))
        if module not in wanted:
            wanted.append(module)
    held = [m for m in wanted if _module_file(top, m)]
    return held, [m for m in wanted if m not in held]


def _detect_fork(path: str | Path, root: Path, protocols: list[Protocol]) -> Layout:
    """A package under another name that holds a pack's markers and shapes: a fork, scanned
    with the pack relocated to its name. Several candidates, or none: a UsageError that says
    what was found and what was missing."""
    candidates: list[tuple[Path, Protocol]] = []
    near: list[str] = []
    packages = _package_dirs(root)
    for proto in protocols:
        for top in packages:
            marker = next((m for m in proto.inner_markers if top.joinpath(*m.split("/")).is_dir()), None)
            if marker is None:
                continue
            held, lacking = _shapes(proto, top)
            if lacking and not held:
                near.append(f"{top.name}/{marker} exists, but {top.name} has no {' or '.join(lacking)} "
                            f"({proto.framework}'s layout), so it is not taken for {proto.framework} "
                            f"(--package {top.name} scans it as {proto.framework})")
                continue
            if all(t != top or p.framework != proto.framework for t, p in candidates):
                candidates.append((top, proto))
    frameworks = {(top, proto.framework) for top, proto in candidates}
    if len(frameworks) == 1:
        top, proto = candidates[0]
        return Layout(root, top.parent, top.name, _version(top, root), proto.framework, proto.package)
    if len(frameworks) > 1:
        listed = ", ".join(f"{top.name} ({framework})" for top, framework in sorted(frameworks))
        raise UsageError(f"{path}: several packages look like a supported framework: {listed}; "
                         "pass --package NAME to pick one")
    wanted = "; ".join(f"{p.framework}: a package named {p.package} holding {', '.join(p.inner_markers) or 'its markers'}"
                       for p in _by_framework(protocols))
    seen = ", ".join(p.name for p in packages[:8]) or "none"
    detail = "; ".join(near) if near else f"Python packages found here: {seen}"
    raise UsageError(f"{path}: no supported framework found (looked for {wanted}, or a fork: a package of "
                     f"another name holding the same folders). {detail}")


def _by_framework(protocols: list[Protocol]) -> list[Protocol]:
    first: dict[str, Protocol] = {}
    for proto in protocols:
        first.setdefault(proto.framework, proto)
    return list(first.values())


_PLACEHOLDER = re.compile(r"^(dev|unknown|0\.0\.0(\.dev0?)?|0(\.0)*\+unknown|0\.0\.0\+.*)$")


def _version(package_dir: Path, root: Path) -> str:
    """The release's version: a literal in version.py / _version.py; when that is a placeholder
    ("dev", "0.0.0", "0+unknown": a fork or a checkout whose build writes the real one), the
    distribution's metadata beside the package (an unpacked wheel's ``*.dist-info/METADATA``,
    an ``*.egg-info/PKG-INFO``), then pyproject.toml; the placeholder only when nothing else says."""
    placeholder = ""
    for candidate in (package_dir / "version.py", package_dir / "_version.py"):
        text = read_regular_file(candidate, 64 * 1024)
        if text is None:
            continue
        # `__version__ = "x"`, `__version__: str = "x"`, `__version__ = version = "x"`
        for match in re.finditer(r"^\s*__version__\s*(?::\s*str\s*)?=\s*(?:\w+\s*=\s*)?['\"]([^'\"]+)['\"]",
                                 text, re.M):
            if not _PLACEHOLDER.match(match.group(1)):
                return match.group(1)
            placeholder = placeholder or match.group(1)
    found = _metadata_version(package_dir)
    if found:
        return found
    for pyproject in (root / "python" / "pyproject.toml", root / "pyproject.toml"):
        text = read_regular_file(pyproject, 1024 * 1024)
        found_version = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M) if text is not None else None
        if found_version:
            return found_version.group(1)
    return "" if placeholder == "dev" else placeholder


def _metadata_version(package_dir: Path) -> str:
    """``Version:`` of the distribution that ships ``package_dir`` (its RECORD or top_level.txt
    names the package), from the metadata folder beside it."""
    try:
        folders = sorted(p for p in package_dir.parent.iterdir()
                         if p.is_dir() and p.name.endswith((".dist-info", ".egg-info")))
    except OSError:
        return ""
    name = package_dir.name
    for folder in folders:
        record = read_regular_file(folder / "RECORD", 16 * 1024 * 1024) or ""
        top = read_regular_file(folder / "top_level.txt", 64 * 1024) or ""
        normalized = re.sub(r"[-_.]+", "_", folder.name.split("-")[0]).lower()
        if not (f"{name}/__init__.py" in record or name in top.split() or normalized == name.lower()):
            continue
        for meta in ("METADATA", "PKG-INFO"):
            text = read_regular_file(folder / meta, 1024 * 1024)
            match = re.search(r"^Version:\s*(\S+)", text, re.M) if text else None
            if match:
                return match.group(1)
    return ""


def list_plugin_sources(path: str | Path, protocols: list[Protocol], host: Layout
                        ) -> tuple[tuple[str, ...], list[SourceFile], list[tuple[str, str]]]:
    """A plugin's packages and files (``scan HOST --plugin PATH``). Its packages are the ones its
    metadata's entry points of the pack's plugin groups name (an unpacked wheel's
    ``*.dist-info/entry_points.txt``; a checkout's pyproject.toml or setup.py), else every top
    package in PATH. Paths are relative to PATH (they name the plugin's own files), or to the host's
    root when PATH lies inside it."""
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"--plugin {path}: not a directory (give the folder of the plugin's checkout or unpacked wheel)")
    root = root.resolve()
    groups = sorted({g for p in protocols if p.framework == host.framework for g in p.plugin_entry_points})
    declared, metadata = _entry_point_packages(root, groups)
    packages = [p for p in _package_dirs(root) if p.parent == root or p.parent.parent == root]
    if metadata and not declared:
        raise UsageError(f"--plugin {path}: its metadata declares none of {host.framework}'s plugin entry points "
                         f"({', '.join(groups) or 'the pack names none'}): not a plugin of {host.framework}")
    chosen = [p for p in packages if p.name in declared] if declared else packages
    chosen = [p for p in chosen if p.name != host.package]
    if not chosen:
        raise UsageError(f"--plugin {path}: no Python package found there"
                         + (f" (its entry points name {', '.join(sorted(declared))})" if declared else ""))
    files: list[SourceFile] = []
    problems: list[tuple[str, str]] = []
    # inside the host's root (an overlay kept beside it): paths relative to the host's root, as its own
    prefix = _rel(str(root), host.scan_root) + "/" if _is_within(root, host.scan_root) and root != host.scan_root else ""
    for top in chosen:
        found, trouble = list_sources(Layout(root, top.parent, top.name, "", host.framework))
        files += [SourceFile(f.module, prefix + f.path, f.abspath, f.is_package) for f in found]
        problems += [(prefix + where, why) for where, why in trouble]
    return tuple(p.name for p in chosen), files, problems


def _entry_point_packages(root: Path, groups: list[str]) -> tuple[set[str], bool]:
    """(top packages the plugin groups' entry points name, whether any metadata was found)."""
    texts: list[str] = []
    try:
        texts += [read_regular_file(m / "entry_points.txt", 1024 * 1024) or "" for m in sorted(root.iterdir())
                  if m.name.endswith((".dist-info", ".egg-info")) and m.is_dir()]
    except OSError:
        pass
    texts += [read_regular_file(root / name, 1024 * 1024) or "" for name in ("pyproject.toml", "setup.py", "setup.cfg")]
    texts = [t for t in texts if t]
    found: set[str] = set()
    for text in texts:
        for group in groups:
            at = text.find(group)
            if at < 0:
                continue
            # the entries after the group's header: `name = pkg.mod:func` (or "name=pkg.mod:func" in setup.py)
            section = text[at + len(group):at + 4000]
            header = re.search(r"\n\s*\[", section)  # the next table or group ends this one
            for match in re.finditer(r"=\s*['\"]?([A-Za-z_][\w.]*)\s*:", section[:header.start()] if header else section):
                found.add(match.group(1).split(".")[0])
    return found, bool(texts) and any("entry" in t or "[" in t for t in texts)


def list_sources(layout: Layout) -> tuple[list[SourceFile], list[tuple[str, str]]]:
    """Every .py file under the scan root that lies inside the package.

    Returns (files, problems): symlink loops, links leaving the root, folders
    that cannot be listed and ``.py`` names that are not regular files (a FIFO
    would block the reader forever) are problems, reported as input errors and
    never followed or read. The walk is iterative (no recursion limit on deep
    trees) and in sorted order, depth first, so results do not depend on the
    order the file system lists entries in.
    """
    files: list[SourceFile] = []
    problems: list[tuple[str, str]] = []
    scan_root = layout.scan_root
    package_dir = layout.base / layout.package
    # Walk only the part of the package that lies under the scan root.
    start = package_dir if _is_within(package_dir, scan_root) else scan_root
    seen_dirs: set[str] = set()
    # (folder, its real path): a plain subfolder's real path is its parent's plus its name,
    # so only the start needs os.path.realpath (a system call per folder of the path)
    stack: list[tuple[str, str]] = [(str(start), os.path.realpath(start))]
    while stack:
        dirpath, real = stack.pop()
        if real in seen_dirs:
            continue
        seen_dirs.add(real)
        try:
            with os.scandir(dirpath) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            problems.append((_rel(dirpath, scan_root), f"cannot list folder: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            full, name = entry.path, entry.name
            is_link = entry.is_symlink()
            try:
                is_dir = entry.is_dir()  # follows links
            except OSError:  # a link loop
                is_dir = False
            if is_dir:
                if name == "__pycache__" or name.startswith("."):
                    continue
                if not is_link:
                    subdirs.append((full, os.path.join(real, name)))
                    continue
                target = os.path.realpath(full)
                if target in seen_dirs or _is_within(Path(full).parent, Path(target)):
                    problems.append((_rel(full, scan_root), "symbolic link loop; not followed"))
                elif not _is_within(Path(target), scan_root):
                    problems.append((_rel(full, scan_root), "symbolic link points outside the scanned root; not followed"))
                continue
            if not name.endswith(".py"):
                continue
            rel = _rel(full, scan_root)
            if is_link:
                target = os.path.realpath(full)
                if not os.path.exists(target):
                    problems.append((rel, "broken or looping symbolic link"))
                    continue
                if not _is_within(Path(target), scan_root):
                    problems.append((rel, "symbolic link points outside the scanned root; not followed"))
                    continue
            try:  # scandir knows the type of a plain entry; a link is stat'ed
                regular = entry.is_file(follow_symlinks=False) if not is_link else stat.S_ISREG(os.stat(full).st_mode)
            except OSError as exc:
                problems.append((rel, f"cannot read: {exc.strerror or exc}"))
                continue
            if not regular:
                problems.append((rel, "not a regular file (a pipe, socket or device); not read"))
                continue
            module_rel = _rel(full, layout.base)
            parts = module_rel[:-3].split("/")
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            if not all(p.isidentifier() for p in parts):
                continue  # not importable as a module (e.g. a script with a dash)
            files.append(SourceFile(".".join(parts), rel, full, is_package))
        stack.extend(reversed(subdirs))
    return files, problems


def _rel(path: str, root: Path | str) -> str:
    prefix = str(root).rstrip(os.sep) + os.sep
    if path.startswith(prefix) and ".." not in path:  # the walk's own paths: no relpath needed (a tenth of a scan)
        return path[len(prefix):].replace(os.sep, "/")
    return os.path.relpath(path, root).replace(os.sep, "/")


def chosen_protocols(layout: Layout, packs: Sequence[Protocol]) -> list[Protocol]:
    """The packs of the tree's framework; on a fork, relocated to its package's name."""
    return [p.relocated(layout.package) for p in packs if p.framework == layout.framework]
