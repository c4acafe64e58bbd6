"""The distribution as the package index would get it: its own name (capture-tracer:
"tracer" there is an unrelated project), the `tracer` command and import package,
the packs and report assets inside, metadata a registry accepts (what `twine check`
looks at: a long description with its content type). Built with setuptools' own
backend from a copy of the tracked files, without network or build isolation.

The README's snippets as a user pastes them: `pip install .` from a clone and the
built wheel, each into a fresh virtual environment; the pre-commit block run by
pre-commit; the GitHub workflow's steps, actions and `tracer` command lines."""

from __future__ import annotations

import email
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def tracked_copy(tree: Path) -> Path:
    """The tracked files of the checkout (what a clone holds), copied to ``tree``."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (REPO / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, tree / name)
    return tree


def test_wheel_and_sdist(tmp_path):
    tree = tracked_copy(tmp_path / "src")
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


# -- installed as a user installs it --------------------------------------------------------------

def fresh_venv(path: Path) -> Path:
    """A new virtual environment. It sees the running environment's packages for tracer's
    dependencies (no network; a path line in a .pth, so their own .pth files, an editable
    tracer's among them, do not run), after its own: its own tracer must be the one imported."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    own = subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    import site

    theirs = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    Path(own, "running-env.pth").write_text("".join(p + "\n" for p in theirs))
    return path / "bin"


def pip_install(bin_dir: Path, what: str, cwd: Path) -> None:
    """The running pip installs into the venv (which has none: a venv's bundled setuptools may be
    older than the build needs); offline, from the given tree or wheel alone; --ignore-installed: a
    capture-tracer the running environment holds (seen through the .pth) is neither reused nor removed."""
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
                          "--no-deps", "--no-index", "--no-build-isolation", "--ignore-installed", what], cwd=cwd, capture_output=True,
                         text=True, env=clean_env())
    assert out.returncode == 0, out.stderr[-2000:]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def assert_installed_tracer_works(bin_dir: Path, where: Path, cache: Path) -> None:
    imported = subprocess.run([str(bin_dir / "python"), "-c", "import tracer; print(tracer.__file__)"],
                              capture_output=True, text=True, cwd=where, env=clean_env())
    assert imported.stdout.startswith(str(bin_dir.parent)), imported.stdout + imported.stderr
    run = subprocess.run([str(bin_dir / "tracer"), "scan", str(REPO / "examples" / "broken-delegation"),
                          "--cache-dir", str(cache)], capture_output=True, text=True, cwd=where, env=clean_env())
    assert run.returncode == 1, run.stderr[-2000:]
    assert re.search(r"^sglang/srt/models/\S+:\d+:\d+: broken-delegation \[error\] sglang-eagle3: ", run.stdout, re.M), \
        run.stdout[:500]
    assert "tracer/_rules" not in run.stderr  # the packs came from the install


def test_pip_install_from_a_clone_and_the_built_wheel_in_fresh_venvs(tmp_path):
    """`pip install .` (README, first line) and the wheel `python -m build` makes, each in
    its own fresh environment, give a working `tracer` command."""
    tree = tracked_copy(tmp_path / "clone")
    cloned = fresh_venv(tmp_path / "venv-clone")
    pip_install(cloned, ".", tree)
    assert_installed_tracer_works(cloned, tmp_path, tmp_path / "cache")

    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-c", "import os; from setuptools import build_meta as b; "
                            "print(b.build_wheel(os.environ['DIST']))"], cwd=tree, capture_output=True, text=True,
                           env={**clean_env(), "DIST": str(dist)})
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = dist / built.stdout.split()[-1]
    wheeled = fresh_venv(tmp_path / "venv-wheel")
    pip_install(wheeled, str(wheel), tmp_path)
    assert_installed_tracer_works(wheeled, tmp_path, tmp_path / "cache")


# -- the README's snippets --------------------------------------------------------------------------

def yaml_block(marker: str) -> str:
    blocks = re.findall(r"```yaml\n(.*?)```", README, re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, (marker, len(found))
    return found[0]


def git(repo: Path, *args: str) -> None:
    env = {**clean_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def test_readme_pre_commit_block_runs_with_pre_commit(tmp_path):
    """The block pasted into a framework repository's .pre-commit-config.yaml: passes on a clean
    tree, fails on a change that breaks a chain, naming the finding."""
    pytest.importorskip("pre_commit")
    block = yaml_block("- repo: local")
    import yaml

    hook = yaml.safe_load(block)["repos"][0]["hooks"][0]
    shipped = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())[0]
    assert {k: hook[k] for k in ("id", "entry", "pass_filenames", "files", "require_serial")} == \
        {k: shipped[k] for k in ("id", "entry", "pass_filenames", "files", "require_serial")}
    repo = tmp_path / "framework"
    shutil.copytree(REPO / "examples" / "ok" / "sglang", repo / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".pre-commit-config.yaml").write_text(block)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    shim = tmp_path / "bin"  # `tracer` on PATH: this checkout's (language: system runs what is installed)
    shim.mkdir()
    (shim / "tracer").write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} "
                                 "-m tracer \"$@\"\n")
    (shim / "tracer").chmod(0o755)
    env = {**clean_env(), "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "PRE_COMMIT_HOME": str(tmp_path / "pc"),
           "TRACER_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    run = [sys.executable, "-m", "pre_commit", "run", "tracer", "--all-files"]
    clean = subprocess.run(run, cwd=repo, capture_output=True, text=True, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    shutil.rmtree(repo / "sglang")
    shutil.copytree(REPO / "examples" / "broken-delegation" / "sglang", repo / "sglang",
                    ignore=shutil.ignore_patterns("__pycache__"))
    broken = subprocess.run(run, cwd=repo, capture_output=True, text=True, env=env)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "broken-delegation [error]" in broken.stdout, broken.stdout


STEP_KEYS = {"name", "id", "if", "uses", "run", "with", "env", "shell", "working-directory", "continue-on-error",
             "timeout-minutes"}
JOB_KEYS = {"runs-on", "permissions", "steps", "needs", "if", "env", "strategy", "timeout-minutes", "name",
            "defaults", "concurrency", "outputs", "services", "container", "continue-on-error"}
PERMISSIONS = {"actions", "attestations", "checks", "contents", "deployments", "id-token", "issues", "discussions",
               "packages", "pages", "pull-requests", "repository-projects", "security-events", "statuses"}


def test_readme_workflow_block_is_a_valid_workflow_whose_commands_parse():
    """The GitHub Actions block: the keys GitHub's workflow syntax knows, each action pinned to a
    major tag, every `${{ }}` closed, tracer installed from the project's own address (PyPI's
    `tracer` is another project), and each `tracer` command line accepted by this CLI."""
    import click
    import yaml

    from tracer.cli import main

    block = yaml_block("jobs:")
    assert block.count("${{") == block.count("}}")
    jobs = yaml.safe_load(block)["jobs"]
    commands = []
    for job in jobs.values():
        assert set(job) <= JOB_KEYS, set(job) - JOB_KEYS
        assert set(job["permissions"]) <= PERMISSIONS and set(job["permissions"].values()) <= {"read", "write", "none"}
        for step in job["steps"]:
            assert set(step) <= STEP_KEYS and ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+(/[\w-]+)*@v\d+", step["uses"]), step["uses"]
            else:
                commands.append(re.sub(r"\$\{\{[^}]*\}\}", "X", step["run"]))
    installs = [c for c in commands if c.startswith("pip install")]
    homepage = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Homepage"]
    assert installs == [f'pip install "capture-tracer @ git+{homepage}"'], installs
    tracer_lines = [shlex.split(c) for c in commands if c.startswith("tracer ")]
    assert len(tracer_lines) == 2
    for words in tracer_lines:
        group_ctx = main.make_context("tracer", words[1:], resilient_parsing=True)
        command = main.get_command(group_ctx, words[1])
        assert command is not None, words
        command.make_context(words[1], words[2:])  # raises click.UsageError on an unknown option or value
    assert isinstance(main, click.Group)


def test_classifiers_and_nox_sessions_name_the_same_pythons():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    classified = sorted(c.rsplit(" ", 1)[-1] for c in project["classifiers"]
                        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    noxed = re.search(r"^PYTHONS = (\[.*\])$", (REPO / "noxfile.py").read_text(), re.M)
    assert noxed is not None
    assert classified == sorted(eval(noxed.group(1)), key=lambda v: tuple(map(int, v.split("."))))
    assert project["requires-python"] == f">={classified[0]}"
