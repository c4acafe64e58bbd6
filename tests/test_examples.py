"""examples/: one framework-shaped tree per failure class, annotated like
semgrep fixtures. Every `# expect: slug` line must produce that finding, and
no other line may produce one; EXPECT.toml gives each entry class's verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tracer.api import scan_to_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TREES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "EXPECT.toml").is_file())
EXPECT_RE = re.compile(rb"#\s*expect:\s*([a-z, -]+)")


def _annotations(tree: Path) -> set[tuple[str, int, str]]:
    found = set()
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree).as_posix()
        for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
            match = EXPECT_RE.search(line)
            if match:
                for slug in match.group(1).decode().split(","):
                    if slug.strip():
                        found.add((rel, number, slug.strip()))
    return found


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    results = {}

    def get(name: str) -> tuple[dict, dict]:
        if name not in results:
            expect = tomllib.loads((EXAMPLES / name / "EXPECT.toml").read_text())
            protocols = [expect["protocol"]] if expect.get("protocol") else None
            plugins = [str(EXAMPLES / name / p) for p in expect.get("plugins", [])]  # scan TREE --plugin P
            results[name] = (scan_to_json(str(EXAMPLES / name), protocols, cache_dir=str(cache), plugins=plugins),
                             expect)
        return results[name]
    return get


KNOWN_GAPS: dict[str, str] = {}  # tree name -> why it is not yet right (strict xfail)


def _maybe_gap(name):
    if name in KNOWN_GAPS:
        return pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_GAPS[name], strict=True))
    return name


@pytest.mark.parametrize("name", [_maybe_gap(n) for n in TREES])
def test_annotated_findings(scans, name):
    scan, expect = scans(name)
    tree = EXAMPLES / name
    want = _annotations(tree)
    for problem in expect.get("input_error", []):
        want.add((problem["file"], problem["line"], "input-error"))
    got = {(f["file"], f["line"], f["slug"]) for f in scan["findings"]}
    assert sorted(got - want) == [], "findings on lines not annotated"
    assert sorted(want - got) == [], "annotated findings that were not reported"


@pytest.mark.parametrize("name", [_maybe_gap(n) for n in TREES])
def test_verdicts(scans, name):
    scan, expect = scans(name)
    from tracer.checks import SLUGS

    got = {m["entry"]: m for m in scan["models"]}
    listed = [model["entry"] for model in expect.get("model", [])]
    assert sorted(got) == sorted(listed), "the tree's entry classes and EXPECT.toml's differ"
    for model in expect.get("model", []):
        assert got[model["entry"]]["verdict"] == model["verdict"], got[model["entry"]]["reason"]
        assert all(slug in SLUGS for slug in model["findings"]), f"{model['findings']}: not a tracer slug"
        assert got[model["entry"]]["findings"] == sorted(model["findings"]), model["entry"]
        if model.get("state_owner"):
            assert got[model["entry"]]["state_owner"] == model["state_owner"]
        if "graph_capture" in model:  # what replayed CUDA graphs capture, from the runner walk
            assert got[model["entry"]].get("graph_capture") == model["graph_capture"], model["entry"]
        if "alternatives" in model:  # a name bound on several branches: each binding and its verdict
            assert [(a["condition"], a["verdict"], a["default"]) for a in got[model["entry"]]["alternatives"]] == \
                [(a["condition"], a["verdict"], a["default"]) for a in model["alternatives"]]
    for site in expect.get("call_site", []):
        match = [s for s in scan["call_sites"] if (s["file"], s["line"]) == (site["file"], site["line"])]
        assert match, f"call site {site['file']}:{site['line']} not found"
        assert match[0]["passes_ids"] == site["passes_ids"]
        assert match[0]["before_graph_capture"] == site["before_graph_capture"]
