"""The scanned tree: where the framework's package is, and its files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    scan_root: Path  # what the user gave (paths in results are relative to it)
    base: Path  # folder that holds the top-level package (module names start here)
    package: str  # "sglang"
    version: str  # "0.5.23" or "" when unknown
    framework: str
    fork_of: str = ""  # the pack's package when the tree is a fork under another name ("vllm")


@dataclass(frozen=True)
class SourceFile:
    module: str
    path: str  # relative to scan_root, with forward slashes
    abspath: str
    is_package: bool
