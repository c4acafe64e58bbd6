"""The distribution as the package index would get it: its own name (capture-tracer:
"tracer" there is an unrelated project), the `tracer` command and import package,
the packs and report assets inside, metadata a registry accepts (what `twine check`
looks at: a long description with its content type). Built with setuptools' own
backend from a copy of the tracked files, without network or build isolation."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_and_sdist(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    tree = tmp_path / "src"
    for name in filter(None, tracked.decode().split("\0")):
        if (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name)
    dist = tmp_path / "dist"
    dist.mkdir()
    # the paths go in the environment: setuptools reads sys.argv as its own command line
    build = ("import os, pathlib; from setuptools import build_meta as b; d = os.environ['DIST']; "
             "pathlib.Path(os.environ['BUILT']).write_text(b.build_wheel(d) + ' ' + b.build_sdist(d))")
    names_file = tmp_path / "built.txt"
    out = subprocess.run([sys.executable, "-c", build], cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "DIST": str(dist), "BUILT": str(names_file)})
    assert out.returncode == 0, out.stderr[-2000:]
    wheel_name, sdist_name = names_file.read_text().split()
    assert wheel_name.startswith("capture_tracer-") and sdist_name.startswith("capture_tracer-")

    with zipfile.ZipFile(dist / wheel_name) as wheel:
        names = wheel.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(wheel.read(info))
        entry_points = wheel.read(info.replace("METADATA", "entry_points.txt")).decode()
    assert metadata["Name"] == "capture-tracer"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert "tracer scan" in metadata.get_payload()  # the README is the long description
    assert any(c.startswith("Topic :: Software Development") for c in metadata.get_all("Classifier"))
    assert metadata.get_all("Project-URL")
    assert "tracer = tracer.cli:main" in entry_points
    assert "tracer/__init__.py" in names and "tracer/_rules/sglang-eagle3.toml" in names
    # every module of the import package is shipped (tracer.safeio once was not: `pip install .`
    # gave a `tracer` command that failed on its first import, while editable installs worked)
    modules = sorted(str(p.relative_to(REPO)) for p in (REPO / "tracer").rglob("*.py"))
    assert [m for m in modules if m not in names] == []
    assert any(n.startswith("tracer/_reports/") for n in names)
    assert (dist / sdist_name).is_file(), (sorted(p.name for p in dist.iterdir()), out.stdout[-3000:])
    with tarfile.open(dist / sdist_name) as sdist:
        assert any(n.endswith("/rules/sglang-eagle3.toml") for n in sdist.getnames()), sdist.getnames()[:20]
