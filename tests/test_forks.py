"""Issue 26: a runner-aware matrix (graph_capture), forks detected by structure, registry rows
through `import ... as` / platform `if` / PEP 562, explain on the scan's results, the version
from the distribution's metadata, and plugins.

The small trees are examples/ (no-graphs, call-order, renamed-fork, ...) or written here;
the `real` tests use releases from PyPI (tests/releases.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.analysis.graph_capture import graph_capture
from tracer.api import scan_to_json, scan_tree
from tracer.config.packs import load_protocols
from tracer.model.findings import Finding
from tracer.model.results import CallSite
from tracer.present.text import TextOptions, format_text

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def tracer(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tracer", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


# -- graph_capture -------------------------------------------------------------------------------

def _site(line: int, ids: bool, before: bool | None, order: int | None, reached: bool | None = True) -> CallSite:
    return CallSite("sglang-eagle3", f"m.Runner.f{line}", "runner.py", line, 0, ids, before, order, reached)


SGLANG = next(p for p in load_protocols() if p.name == "sglang-eagle3")


@pytest.mark.parametrize(("sites", "value", "where"), [
    # the configured call before capture: graphs replay the configured layers
    ([_site(10, True, True, 0)], "configured", "runner.py:10"),
    # no ids right before capture, the configured ids only afterwards (the fork of issue 26)
    ([_site(10, False, True, 0), _site(20, True, False, 2)], "fallback", "runner.py:10"),
    # the configured call first, then a call without ids, then capture: the last one wins
    ([_site(10, True, True, 0), _site(20, False, True, 1)], "fallback", "runner.py:20"),
    # the other way round: configured last before capture
    ([_site(10, False, True, 0), _site(20, True, True, 1)], "configured", "runner.py:20"),
    # only after capture: graphs were captured before any ids (call-order)
    ([_site(20, True, False, 3)], "fallback", "runner.py:20"),
    # a call inside the graph runner (not reached by the walk) runs right before its capture
    ([_site(10, True, True, 0), _site(30, False, True, None)], "fallback", "runner.py:30"),
    # the walk reaches no capture
    ([_site(10, True, True, 0, reached=False)], "no-graphs", "runner.py:10"),
    # call sites the walk does not place, or none at all
    ([_site(10, True, None, None)], "unknown", ""),
    ([], "unknown", ""),
    # a site read back from an older JSON (whether a capture was reached is not known)
    ([_site(10, True, True, 0, reached=None)], "unknown", ""),
])
def test_graph_capture_is_the_last_call_before_capture(sites, value, where):
    answer = graph_capture(SGLANG, sites)
    assert (answer.value, answer.site) == (value, where)


def test_model_defaults_in_place_of_the_ids_are_fallback():
    """vLLM 0.11.0's shape: setter(model.get_default_layers()) passes arguments, but not the
    draft's ids (an ids-dropped at the runner): graphs capture the defaults."""
    dropped = Finding("ids-dropped", "error", "sglang-eagle3", None, "runner.py", 10, 0, "", "")
    assert graph_capture(SGLANG, [_site(10, True, True, 0)], [dropped]).value == "fallback"


def test_ids_on_the_config_are_unknown():
    lmdeploy = next(p for p in load_protocols() if p.name == "lmdeploy-eagle3")
    assert graph_capture(lmdeploy, [_site(10, True, True, 0)]).value == "unknown"


@pytest.mark.parametrize(("tree", "value"), [("call-order", "fallback"), ("no-graphs", "no-graphs"),
                                              ("aux-dropped", "configured")])
def test_every_judged_row_carries_the_runner_answer(tree, value, tmp_path):
    data = scan_to_json(str(EXAMPLES / tree), ["sglang-eagle3"], cache_dir=str(tmp_path))
    judged = [m for m in data["models"] if m["verdict"] not in ("missing", "draft")]
    assert judged and {m["graph_capture"] for m in judged} == {value}
    assert all("graph_capture" not in m for m in data["models"] if m["verdict"] in ("missing", "draft"))


def test_summary_and_matrix_say_graphs_replay_the_fallback(tmp_path):
    """The ok rows of a runner that captures graphs before the ids are not plain ok: the
    summary line and the report's matrix say so, with the call that decides it."""
    context = scan_tree(EXAMPLES / "call-order", ["sglang-eagle3"], cache_dir=tmp_path)
    text = format_text(context.result, TextOptions(quiet=True))
    line = next(x for x in text.splitlines() if x.strip().startswith("sglang-eagle3:"))
    assert "2 target models (2 ok) — replayed CUDA graphs capture the fallback layers: cuda_graph_runner.py:27" in line
    out = tracer("report", str(EXAMPLES / "call-order"), "-o", str(tmp_path / "report"), "--protocol", "sglang-eagle3",
                 "--cache-dir", str(tmp_path / "cache"))
    assert out.returncode in (0, 1), out.stderr
    page = (tmp_path / "report" / "index.html").read_text()
    assert page.count('<span class="gc">graphs: fallback</span>') == 2
    assert "replayed CUDA graphs capture the fallback layers: cuda_graph_runner.py:27" in page


def test_configured_runner_says_nothing_more(tmp_path):
    context = scan_tree(EXAMPLES / "aux-dropped", ["sglang-eagle3"], cache_dir=tmp_path)
    assert "CUDA graphs" not in format_text(context.result, TextOptions(quiet=True))


def test_graph_capture_survives_the_json_round_trip(tmp_path):
    from tracer.present.scan_json import from_json, to_json

    data = scan_to_json(str(EXAMPLES / "call-order"), ["sglang-eagle3"], cache_dir=str(tmp_path))
    back = to_json(from_json(json.loads(json.dumps(data))))
    assert [m.get("graph_capture") for m in back["models"]] == [m.get("graph_capture") for m in data["models"]]
    assert [s.get("graph_capture_reached") for s in back["call_sites"]] == [True, True]


@pytest.mark.real
@pytest.mark.parametrize(("version", "value", "site"), [
    # 0.5.6: CudaGraphRunner.__init__ calls the setter without ids right before capture()
    # (proven on the H200: replayed graphs capture the fallback layers)
    ("0.5.6", "fallback", "sglang/srt/model_executor/cuda_graph_runner.py:339"),
    ("0.5.23", "configured", "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py:61"),
])
def test_sglang_releases_graph_capture_for_every_ok_row(scanned_release, version, value, site):
    data = scanned_release(version)
    ok = [m for m in data["models"] if m["protocol"] == "sglang-eagle3" and m["verdict"] == "ok"]
    assert len(ok) >= 18
    assert {(m["graph_capture"], m["graph_capture_site"]) for m in ok} == {(value, site)}
