"""Tests generated from the finding catalogue (tracer/checks/): every check's
examples that must fire produce its finding at each `# expect: <slug>` line and
nowhere else, and every example that must stay quiet produces none of it. A
check cannot exist without its proof (fixit's VALID / INVALID cases)."""

from __future__ import annotations

import json
import re

import pytest

from tracer.checks import CATALOGUE, SLUGS, Example
from tracer.config.packs import load_protocols
from tracer.lint.suppress import apply_suppressions
from tracer.present.scan_json import to_json

_EXPECT = re.compile(r"#\s*expect:\s*([\w,\s-]+)$")
_BASE_FILES = {
    "sglang": {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.0.0-example"\n',
               "sglang/srt/__init__.py": "", "sglang/srt/models/__init__.py": "",
               "sglang/srt/model_executor/__init__.py": ""},
    "vllm": {},
    "lmdeploy": {},
}


def _tree(tmp_path, example: Example):
    files = dict(example.files)
    framework = next((f for f in ("vllm", "lmdeploy") if example.protocol.startswith(f)), "sglang")
    for path, text in _BASE_FILES[framework].items():
        files.setdefault(path, text)
    for path in list(files):  # every folder a package
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            files.setdefault("/".join(parts[:depth]) + "/__init__.py", "")
    for path, text in files.items():
        target = tmp_path / "tree" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    expected = set()
    for path, text in files.items():
        for number, line in enumerate(text.split("\n"), 1):
            match = _EXPECT.search(line)
            if match:
                for slug in match.group(1).split(","):
                    expected.add((path, number, slug.strip()))
    return tmp_path / "tree", expected


def _lint_findings(tmp_path, example: Example) -> tuple[list[dict], set]:
    """A check of `tracer lint --base`: base_files committed on main, files on a branch."""
    import dataclasses
    import shutil
    import subprocess

    from tracer.config.settings import LintConfig
    from tracer.lint.lint import lint
    from tracer.lint.records import Options

    repo = tmp_path / "repo"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin",
           "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)

    base, _ = _tree(tmp_path / "base", dataclasses.replace(example, files=example.base_files or ()))
    shutil.copytree(base, repo)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "change")
    head, expected = _tree(tmp_path / "head", example)
    shutil.rmtree(repo / "sglang")
    shutil.copytree(head / "sglang", repo / "sglang")
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", "change")
    result = lint(repo, "main", LintConfig(fail_on="info"),
                  Options((example.protocol,), (), str(tmp_path / "cache"), True, 1))
    return result["findings"], expected


def _findings(tmp_path, example: Example) -> tuple[list[dict], set]:
    from tracer.api import scan_tree

    if example.base_files is not None:
        return _lint_findings(tmp_path, example)
    root, expected = _tree(tmp_path, example)
    packs = load_protocols([example.protocol])
    result = apply_suppressions(scan_tree(root, packs, use_cache=False).result)
    if example.target_config is not None:
        from tracer.effective.annotate import annotate_scan

        target = tmp_path / "target" / "config.json"
        draft = tmp_path / "draft" / "config.json"
        for path, data in ((target, example.target_config), (draft, example.draft_config)):
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(data))
        result = annotate_scan(result, packs, target, draft, use_cache=False, pp=example.pp,
                               draft_framework=example.draft_framework or None)
    return to_json(result)["findings"], expected


# Examples a check does not pass yet, each with its reason (strict: an xfail that passes fails).
KNOWN_GAPS: dict[str, str] = {}


def _cases(kind: str):
    for slug, check in CATALOGUE.items():
        for index, example in enumerate(getattr(check, kind)):
            case = f"{slug}-{kind}-{index}"
            marks = [pytest.mark.xfail(reason=KNOWN_GAPS[case], strict=True)] if case in KNOWN_GAPS else []
            yield pytest.param(slug, example, id=case, marks=marks)


def test_every_check_has_examples_both_ways():
    for slug, check in CATALOGUE.items():
        assert check.fires, f"{slug} has no example that must fire"
        assert check.quiet, f"{slug} has no example that must stay quiet"
        assert check.what and check.why and check.example and check.fix and check.summary
        assert check.messages and all(isinstance(t, str) for t in check.messages.values())


@pytest.mark.parametrize("slug, example", list(_cases("fires")))
def test_fires_at_every_marked_line(tmp_path, slug, example):
    findings, expected = _findings(tmp_path, example)
    marked = {(f, line) for f, line, s in expected if s == slug}
    assert marked, f"an example of {slug} marks no line"
    got = {(f["file"], f["line"]) for f in findings if f["slug"] == slug}
    assert got == marked, [f["message"] for f in findings if f["slug"] == slug]
    for f in findings:
        if f["slug"] == slug:
            assert f["severity"] in ("error", "warning", "info") and f["hint"] and f["message"]


@pytest.mark.parametrize("slug, example", list(_cases("quiet")))
def test_stays_quiet(tmp_path, slug, example):
    findings, _ = _findings(tmp_path, example)
    assert [f for f in findings if f["slug"] == slug] == []


def test_the_catalogue_is_closed():
    """A slug nobody declared cannot be made, and SLUGS lists exactly the catalogue."""
    from tracer.checks import UnknownCheck, finding

    assert set(SLUGS) == set(CATALOGUE)
    with pytest.raises(UnknownCheck):
        finding("no-such-check", file="x.py", line=1)
