"""The HTML report and Graphviz pictures (tracer.present.report, tracer.present.render).

Unit tests run on a hand-written scan JSON (tests/data/report_scan.json); the
browser tests open the written pages in headless Chromium (Debian's
``chromium``) and skip where it is not installed; the ``real`` test scans a
real SGLang release with the engine and skips until both are there.
"""

from __future__ import annotations

import copy
import html.parser
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from click.testing import CliRunner

from tracer.cli import main
from tracer.present import graphs as _graphs
from tracer.present import render as _render
from tracer.present import report as _report
from tracer.present.scan_json import finding_from_json, from_json, model_from_json


# The report works on the typed result; these tests keep their scans in the JSON shape
# a user saves (`tracer scan --format json`), read through the one JSON module.
def build_report(scan: dict, out, root, jobs=None):
    return _report.build_report(from_json(scan), out, root, jobs)


def _model(model: dict):
    return model_from_json(dict({"file": "", "line": 0, "reason": ""}, **model), ())


class rendering:
    RED = _render.RED
    render = staticmethod(_render.render)
    render_svgs = staticmethod(_render.render_svgs)
    page_name = staticmethod(_graphs.page_name)

    @staticmethod
    def chain_dot(model: dict, findings=None):
        return _render.chain_dot(_model(model), [finding_from_json(f) for f in findings or []])

    @staticmethod
    def hop_problem(model: dict, findings=None):
        return _graphs.hop_problem(_model(model), [finding_from_json(f) for f in findings or []])

    @staticmethod
    def protocol_graph_dot(scan: dict):
        return _render.protocol_graph_dot(_graphs.protocol_graph(from_json(scan), "models/{page}"))



DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "report_scan.json"
GRAPHVIZ = shutil.which("dot") is not None
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_graphviz = pytest.mark.skipif(not GRAPHVIZ, reason="Graphviz (`dot`) is not installed")
needs_chromium = pytest.mark.skipif(not (CHROMIUM and GRAPHVIZ), reason="chromium and graphviz are not installed")


@pytest.fixture
def scan() -> dict:
    return json.loads(FIXTURE.read_text())


def entries_of(scan: dict) -> set[str]:
    return {m["entry"] for m in scan["models"]}


def model_of(scan: dict, entry_suffix: str, protocol: str = "sglang-eagle3") -> dict:
    return next(m for m in scan["models"] if m["entry"].endswith(entry_suffix) and m["protocol"] == protocol)


class _Collect(html.parser.HTMLParser):
    """Tags with their attributes, and the rows of the table with id=matrix."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.matrix_rows: list[dict] = []
        self._in_matrix_body = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table" and attrs.get("id") == "matrix":
            self._in_matrix_body = None  # inside the table, before tbody
        elif tag == "tbody" and self._in_matrix_body is None:
            self._in_matrix_body = True
        elif tag == "tr" and self._in_matrix_body:
            self.matrix_rows.append(attrs)

    def handle_endtag(self, tag):
        if tag == "tbody" and self._in_matrix_body:
            self._in_matrix_body = False


def parse(path: Path) -> _Collect:
    collector = _Collect()
    collector.feed(path.read_text(encoding="utf-8"))
    return collector


EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def external_references(path: Path) -> list[str]:
    """Every src/href/xlink:href/action of a page that would leave the machine."""
    found = []
    for tag, attrs in parse(path).tags:
        for name in ("src", "href", "xlink:href", "action", "data", "poster"):
            value = (attrs.get(name) or "").strip()
            if EXTERNAL.match(value) or value.lower().startswith(("http:", "https:")):
                found.append(f"{path.name}: <{tag} {name}={value}>")
    text = path.read_text(encoding="utf-8")
    found += [f"{path.name}: url({u})" for u in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)", text)]
    found += [f"{path.name}: @import" for _ in re.findall(r"@import", text)]
    return found


# --------------------------------------------------------------------------
# the report from the fixture


def test_report_writes_index_pages_and_callgraph(scan, tmp_path):
    summary = build_report(scan, tmp_path, None)
    entries = entries_of(scan)
    assert summary["pages"] == len(entries)
    assert (tmp_path / "index.html").is_file()
    assert (tmp_path / "callgraph.dot").is_file()
    for entry in entries:
        assert (tmp_path / "models" / rendering.page_name(entry)).is_file()
    for name in ("report.css", "report.js"):
        assert (tmp_path / name).stat().st_size > 100
    with_chain = [m for m in scan["models"] if m["chain"]]
    assert len(list((tmp_path / "chains").glob("*.dot"))) == len(with_chain)
    if GRAPHVIZ:
        assert summary["graphviz"] is True
        assert summary["pictures"] == len(with_chain)
        assert (tmp_path / "callgraph.svg").read_text().lstrip().startswith("<?xml")


def test_a_second_report_in_the_same_folder_drops_stale_pages(scan, tmp_path):
    build_report(scan, tmp_path, None)
    gone = model_of(scan, "Gemma3ForConditionalGeneration")["entry"]
    smaller = dict(scan, models=[m for m in scan["models"] if m["entry"] != gone])
    (tmp_path / "models" / "mine.txt").write_text("not ours")
    build_report(smaller, tmp_path, None)
    assert not (tmp_path / "models" / rendering.page_name(gone)).exists()
    assert not list((tmp_path / "chains").glob("*Gemma3*"))
    assert (tmp_path / "models" / "mine.txt").exists()
    # a folder the report did not write is never cleared
    other = tmp_path / "other"
    (other / "models").mkdir(parents=True)
    (other / "models" / "keep.html").write_text("x")
    build_report(smaller, other, None)
    assert (other / "models" / "keep.html").exists()


def test_index_matrix_has_one_row_per_entry_class_and_links_cells(scan, tmp_path):
    build_report(scan, tmp_path, None)
    page = parse(tmp_path / "index.html")
    rows = page.matrix_rows
    assert sorted(r["data-entry"] for r in rows) == sorted(entries_of(scan))
    links = [a["href"] for tag, a in page.tags if tag == "a" and (a.get("class") or "").startswith("v-")]
    assert len(links) == len(scan["models"])  # one cell per (entry, protocol)
    for href in links:
        assert (tmp_path / href.split("#")[0]).is_file()
    gemma = next(r for r in rows if r["data-entry"].endswith("Gemma3ForConditionalGeneration"))
    assert "sglang-eagle3:broken" in gemma["data-verdicts"].split()
    assert "broken-delegation" in gemma["data-slugs"].split()


def test_index_counts_by_verdict_and_by_slug(scan, tmp_path):
    build_report(scan, tmp_path, None)
    text = (tmp_path / "index.html").read_text()
    # three broken eagle3 models in the fixture
    assert re.search(r'data-verdict="broken" data-protocol="sglang-eagle3"[^>]*><b>3</b>', text)
    assert re.search(r'data-verdict="missing" data-protocol="sglang-dflash"[^>]*><b>6</b>', text)
    for finding in scan["findings"]:
        assert f'data-slug="{finding["slug"]}"' in text
    assert "sglang 0.0.0-fixture" in text and "/nonexistent/sglang-0.0.0-fixture" not in text  # no absolute root


def test_model_page_shows_findings_call_sites_and_red_hop(scan, tmp_path):
    build_report(scan, tmp_path, None)
    entry = model_of(scan, "Llama4ForConditionalGeneration")["entry"]
    text = (tmp_path / "models" / rendering.page_name(entry)).read_text()
    assert "ids-dropped" in text and "pass layer_ids through" in text
    assert "EAGLEWorker.__init__" in text and "after" in text  # runner call site, late
    assert 'id="p-sglang-eagle3-1" class="bad"' in text  # the delegate hop's row
    if GRAPHVIZ:
        assert "<svg" in text and "hop&#45;bad" in text and rendering.RED in text
        assert "<?xml" not in text and "<!DOCTYPE svg" not in text


def test_no_page_references_anything_outside(scan, tmp_path):
    build_report(scan, tmp_path, None)
    pages = [tmp_path / "index.html", *sorted((tmp_path / "models").glob("*.html"))]
    problems = [p for page in pages for p in external_references(page)]
    assert problems == []
    css = (tmp_path / "report.css").read_text()
    assert "@import" not in css and not re.search(r"url\(", css)
    assert not re.search(r"\b(fetch|XMLHttpRequest|WebSocket|EventSource|sendBeacon)\b", (tmp_path / "report.js").read_text())
    for page in pages:  # and the browser is told to refuse it anyway
        assert "default-src 'none'" in page.read_text()


def test_a_finding_shared_by_several_entry_classes_shows_on_each(scan, tmp_path):
    build_report(scan, tmp_path, None)
    for suffix in ("KimiK25ForConditionalGeneration", "DeepseekV3ForCausalLM"):
        entry = model_of(scan, suffix)["entry"]
        assert "silent-fallback" in (tmp_path / "models" / rendering.page_name(entry)).read_text()
    index = (tmp_path / "index.html").read_text()
    row = re.search(r"<tr><td>[^\n]*?silent-fallback.*?</tr>", index).group(0)
    assert "KimiK25ForConditionalGeneration</a><br><a" in row and "DeepseekV3ForCausalLM</a>" in row
    assert re.search(r'data-slug="silent-fallback"[^>]*>.*?<b>1</b>', index)  # counted once


def test_source_excerpts_come_from_source_root(scan, tmp_path):
    source = tmp_path / "src"
    target = source / "sglang/srt/models/mllama4.py"
    target.parent.mkdir(parents=True)
    target.write_text("".join(f"line_{n} = {n}\n" for n in range(1, 981)).replace(
        "line_973 = 973", "        self.language_model.set_eagle3_layers_to_capture()  # <evil>"))
    build_report(scan, tmp_path / "out", source)
    entry = model_of(scan, "Llama4ForConditionalGeneration")["entry"]
    text = (tmp_path / "out/models" / rendering.page_name(entry)).read_text()
    assert '<span class="hit"><i>973</i>' in text
    assert "&lt;evil&gt;" in text and "<evil>" not in text
    assert "<i>970</i>" in text and "<i>976</i>" in text and "<i>969</i>" not in text
    # a finding pointing outside the root is not read
    hostile = copy.deepcopy(scan)
    hostile["findings"][2]["file"] = "../../../etc/passwd"
    hostile["findings"][2]["line"] = 1
    build_report(hostile, tmp_path / "out2", source)
    assert "root:" not in (tmp_path / "out2/models" / rendering.page_name(entry)).read_text()


def test_hostile_names_are_escaped_everywhere(scan, tmp_path):
    scan = copy.deepcopy(scan)
    model = model_of(scan, "Gemma3ForConditionalGeneration")
    model["reason"] = '<script>alert(1)</script> "quoted" \\ back'
    model["chain"][1]["reason"] = '<img src=x onerror=alert(1)> \\n "q"'
    scan["findings"][1]["message"] = "<b>bold</b>"
    summary = build_report(scan, tmp_path, None)
    text = (tmp_path / "models" / rendering.page_name(model["entry"])).read_text()
    assert "<script>alert" not in text and "<img src=x" not in text and "<b>bold</b>" not in text
    if GRAPHVIZ:
        assert summary["pictures"] == len([m for m in scan["models"] if m["chain"]])


def test_report_without_graphviz_writes_dot_and_says_so(scan, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    summary = build_report(scan, tmp_path / "out", None)
    assert summary["graphviz"] is False and summary["pictures"] == 0
    assert "need Graphviz" in summary["message"]
    assert (tmp_path / "out/callgraph.dot").is_file() and not (tmp_path / "out/callgraph.svg").exists()
    assert list((tmp_path / "out/chains").glob("*.dot")) and not list((tmp_path / "out/chains").glob("*.svg"))
    assert "Pictures need Graphviz" in (tmp_path / "out/index.html").read_text()
    entry = model_of(scan, "Llama4ForConditionalGeneration")["entry"]
    assert "Pictures need Graphviz" in (tmp_path / "out/models" / rendering.page_name(entry)).read_text()
    result = rendering.render(rendering.chain_dot(model_of(scan, "Llama4ForConditionalGeneration")), "png", tmp_path / "x.png")
    assert result["picture"] is None and result["dot"].is_file() and "Graphviz" in result["message"]


# --------------------------------------------------------------------------
# pictures


def test_chain_dot_draws_the_broken_hop_red(scan):
    model = model_of(scan, "Llama4ForConditionalGeneration")
    findings = [f for f in scan["findings"] if f["entry"] == model["entry"]]
    assert rendering.hop_problem(model, findings) == 1  # the call without ids
    dot = rendering.chain_dot(model, findings)
    red_nodes = [n for n in dot.get_nodes() if n.get("color") == rendering.RED]
    assert len(red_nodes) == 1 and "LlamaForCausalLM" in red_nodes[0].get("label")
    red_edges = [e for e in dot.get_edges() if e.get("color") == rendering.RED]
    assert len(red_edges) == 1 and "NO IDS" in red_edges[0].get("label")
    # every hop is a node, labelled short, with file:line in its tooltip
    text = dot.to_string()
    assert "sglang/srt/models/llama.py:700" in text and "legend" in text
    assert "sglang.srt.models.llama.LlamaForCausalLM" not in re.sub(r'tooltip="[^"]*"', "", text).replace('"hop1:sglang.srt.models.llama.LlamaForCausalLM.set_eagle3_layers_to_capture"', "")


def test_ok_chain_has_no_red_even_with_a_warning(scan):
    model = model_of(scan, "KimiK25ForConditionalGeneration")
    findings = [f for f in scan["findings"] if f["entry"] == model["entry"]]
    assert rendering.hop_problem(model, findings) is None
    dot = rendering.chain_dot(model, findings)
    assert not [x for x in dot.get_nodes() + dot.get_edges() if x.get("color") == rendering.RED]
    assert "hop-bad" not in dot.to_string()


def test_unresolved_hop_is_red_and_edges_carry_resolved_by(scan):
    model = model_of(scan, "Qwen3VLForConditionalGeneration")
    assert rendering.hop_problem(model) == 1
    text = rendering.chain_dot(model).to_string()
    assert "language_model_cls" in text and "own method" in text


def test_protocol_graph_is_clustered_by_module_and_stable(scan):
    first = rendering.protocol_graph_dot(scan).to_string()
    shuffled = copy.deepcopy(scan)
    random.Random(4).shuffle(shuffled["models"])
    random.Random(5).shuffle(shuffled["call_sites"])
    assert rendering.protocol_graph_dot(shuffled).to_string() == first
    clusters = set(re.findall(r"subgraph (cluster_\w+)", first))
    assert {"cluster_m_sglang_srt_models_deepseek_v2", "cluster_m_sglang_srt_models_llama",
            "cluster_m_sglang_srt_model_executor_model_runner"} <= clusters
    assert "Qwen2_5_VL" not in first  # missing models have no chain to draw
    node_lines = [line for line in first.splitlines() if line.startswith('"sglang.srt.models.deepseek_v2.DeepseekV2Model.forward" [')]
    assert len(node_lines) == 1  # shared hops are one node


@needs_graphviz
@pytest.mark.parametrize("fmt", ["svg", "png", "dot"])
def test_render_writes_dot_and_picture(scan, tmp_path, fmt):
    result = rendering.render(rendering.chain_dot(model_of(scan, "KimiK25ForConditionalGeneration")), fmt, tmp_path / f"c.{fmt}")
    assert result["dot"].read_text().startswith("digraph")
    if fmt == "dot":
        assert result["picture"] is None
    else:
        data = result["picture"].read_bytes()
        assert data.startswith(b"\x89PNG") if fmt == "png" else b"<svg" in data


@needs_graphviz
def test_svg_nodes_carry_a_hover_title_with_file_and_line(scan, tmp_path):
    model = model_of(scan, "KimiK25ForConditionalGeneration")
    svg = rendering.render_svgs([rendering.chain_dot(model).to_string()])[0]
    assert "<title>sglang.srt.models.deepseek_v2.DeepseekV2ForCausalLM.set_eagle3_layers_to_capture&#10;sglang/srt/models/deepseek_v2.py:3458" in svg
    result = rendering.render(rendering.protocol_graph_dot(scan), "svg", tmp_path / "all.svg")
    assert "<title>sglang.srt.models.llama.LlamaModel.forward&#10;sglang/srt/models/llama.py:390</title>" in result["picture"].read_text()


@needs_graphviz
def test_render_svgs_keeps_good_pictures_when_one_graph_is_bad():
    good = rendering.chain_dot({"entry": "a.B", "protocol": "p", "verdict": "missing", "chain": []}).to_string()
    results = rendering.render_svgs([good, "digraph { this is not dot", good, good], jobs=2)
    assert [r is not None for r in results] == [True, False, True, True]
    assert all(r.count("<svg") == 1 for r in results if r)


def test_cli_report_from_saved_scan(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["report", "--from", str(FIXTURE), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "index.html" in result.output and (tmp_path / "r/index.html").is_file()
    assert runner.invoke(main, ["report", "-o", str(tmp_path / "r2")]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert runner.invoke(main, ["report", "--from", str(bad), "-o", str(tmp_path / "r3")]).exit_code == 2


# --------------------------------------------------------------------------
# speed on a scan the size of SGLang 0.5.23's


def synthetic_scan(entries: int = 450, seed: int = 0) -> dict:
    """A scan shaped like a real release's: many entry classes, most missing, chains of 2-6 hops."""
    rng = random.Random(seed)
    base = json.loads(FIXTURE.read_text())
    traced = [m for m in base["models"] if m["chain"]]
    models, findings = [], []
    for index in range(entries):
        module = f"sglang.srt.models.m{index % 180:03d}"
        entry = f"{module}.Model{index}ForCausalLM"
        for protocol in base["protocols"]:
            roll = rng.random()
            if roll < 0.55:
                models.append({"entry": entry, "file": module.replace(".", "/") + ".py", "line": 10, "protocol": protocol,
                               "verdict": "missing", "reason": "no setter", "chain": [], "findings": []})
                continue
            model = copy.deepcopy(rng.choice([m for m in traced if m["protocol"] == protocol]))
            model["entry"], model["file"] = entry, module.replace(".", "/") + ".py"
            if rng.random() < 0.5:  # its own setter, delegating to a shared base
                own = copy.deepcopy(model["chain"][0])
                own.update(kind="setter", qualname=f"{entry}.set_x", file=model["file"], line=40, resolved_by="own method")
                model["chain"][0]["kind"] = "delegate"
                model["chain"].insert(0, own)
            if rng.random() < 0.3 and model["chain"][-1]["kind"] == "read":  # a second reader
                model["chain"].append(dict(model["chain"][-1], qualname=model["chain"][-1]["qualname"][:-7] + "extend", line=77))
            models.append(model)
            if model["verdict"] in ("broken", "unknown"):
                findings.append({"slug": "broken-delegation", "severity": "error", "protocol": protocol, "entry": entry,
                                 "file": model["chain"][-1]["file"], "line": model["chain"][-1]["line"], "col": 1,
                                 "message": "m", "hint": "h", "chain": []})
    return dict(base, models=models, findings=findings)


@needs_graphviz
def test_report_for_a_release_sized_scan_is_fast(tmp_path):
    scan = synthetic_scan()
    started = time.perf_counter()
    summary = build_report(scan, tmp_path, None, jobs=2)
    seconds = time.perf_counter() - started
    assert summary["pages"] == 450
    assert summary["pictures"] == len([m for m in scan["models"] if m["chain"]])
    # The goal is 10 s on 2 cores for 0.5.23; leave room for a busy CI machine.
    assert seconds < 20, f"report took {seconds:.1f} s"


# --------------------------------------------------------------------------
# in a real browser

BACKGROUND_HOSTS = ("google.com", "googleapis.com", "gvt1.com", "gstatic.com", "googleusercontent.com")


def chromium(url: str, work: Path, screenshot: Path | None = None, size: str = "1400,1600") -> tuple[str, list[str]]:
    """Open url headless; return the DOM after scripts ran and every network URL the page asked for.

    Chromium's own background traffic (update checks and the like, to Google
    hosts) is left out; host resolution is mapped to nothing so no request
    could leave the machine anyway.
    """
    profile = Path(tempfile.mkdtemp(prefix="chromium-", dir=work))
    net_log = work / f"netlog-{len(list(work.glob('netlog-*')))}.json"
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}",
        '--host-resolver-rules=MAP * ~NOTFOUND', f"--log-net-log={net_log}",
        f"--window-size={size}", "--virtual-time-budget=3000",
    ]
    command += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*command, url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    requested = []
    if net_log.exists():
        for found in set(re.findall(r'"url":"([^"]+)"', net_log.read_text(errors="replace"))):
            parsed = urlparse(found)
            if parsed.scheme in ("http", "https", "ws", "wss") and not (parsed.hostname or "").endswith(BACKGROUND_HOSTS):
                requested.append(found)
    shutil.rmtree(profile, ignore_errors=True)
    return done.stdout, requested


def check_in_browser(scan: dict, out: Path, work: Path, shots: Path) -> None:
    """The checks the issue asks for, on any report: rows, red hop, no network."""
    shots.mkdir(parents=True, exist_ok=True)
    index = (out / "index.html").resolve()
    dom, requested = chromium(index.as_uri(), work)
    assert requested == []
    page = _Collect()
    page.feed(dom)
    assert sorted(r["data-entry"] for r in page.matrix_rows) == sorted(entries_of(scan))
    entries = len(entries_of(scan))
    assert f"showing {entries} of {entries} entry classes" in dom  # the script ran
    chromium(index.as_uri(), work, shots / "index.png")

    broken = next(m for m in scan["models"] if m["verdict"] == "broken" and m["chain"])
    page_path = (out / "models" / rendering.page_name(broken["entry"])).resolve()
    dom, requested = chromium(page_path.as_uri(), work)
    assert requested == []
    assert re.search(r'<g id="node\d+" class="node hop-bad">', dom), "no red hop in the broken model's picture"
    assert rendering.RED in dom
    chromium(page_path.as_uri(), work, shots / "broken-model.png", size="1400,1400")
    for shot in shots.glob("*.png"):
        assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000


@needs_chromium
def test_fixture_report_in_headless_chromium(scan, tmp_path):
    build_report(scan, tmp_path / "out", None)
    check_in_browser(scan, tmp_path / "out", tmp_path, Path(os.environ.get("TRACER_SCREENSHOTS", tmp_path)) / "fixture")
    # the filter and sort run in the page, driven here by the address
    url = (tmp_path / "out/index.html").resolve().as_uri() + "#verdict=broken&protocol=sglang-eagle3&sort=-0"
    dom, requested = chromium(url, tmp_path)
    assert requested == []
    page = _Collect()
    page.feed(dom)
    shown = [r["data-entry"] for r in page.matrix_rows if "hidden" not in r]
    broken = {m["entry"] for m in scan["models"] if m["protocol"] == "sglang-eagle3" and m["verdict"] == "broken"}
    assert set(shown) == broken and "showing 3 of 8 entry classes" in dom
    names = [e.rsplit(".", 1)[-1].lower() for e in shown]
    assert names == sorted(names, reverse=True)


def real_release(request, version: str) -> Path:
    """A downloaded SGLang release: the suite's ``sglang_release`` fixture where
    there is one, else a cached copy, else skip."""
    try:
        return Path(request.getfixturevalue("sglang_release")(version))
    except pytest.FixtureLookupError:
        pass
    candidates = [os.environ.get("TRACER_SGLANG_CACHE"), f"/root/.cache/tracer-test/sglang-{version}"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "sglang" / "srt" / "models").is_dir():
            return Path(candidate)
    pytest.skip(f"SGLang {version} is not downloaded (set TRACER_SGLANG_CACHE)")


def check_links_in_browser(out: Path, root: Path, work: Path, shots: Path) -> None:
    """Issue 17: problems first, a legend, every file:line a link to an offline view of that
    line (the page exists, the anchor is there and holds the scanned line)."""
    shots.mkdir(parents=True, exist_ok=True)
    index = (out / "index.html").resolve()
    dom, requested = chromium(index.as_uri(), work)
    assert requested == []
    assert "What the badges mean" in dom and 'class="badge v-broken">broken</span> a hop of the chain breaks' in dom
    first_row = re.search(r'<tr data-entry="[^"]*" data-verdicts="([^"]*)"', dom).group(1)
    assert "broken" in first_row or "unknown" in first_row, first_row  # problems first
    links = re.findall(r'<a class="src" href="(source/[^"#]+)#L(\d+)"', dom)
    assert links, "no finding or call site links to its source line"
    model_pages = sorted((out / "models").glob("*.html"))
    for page in model_pages[:40]:
        links += [(href.removeprefix("../"), line)
                  for href, line in re.findall(r'<a class="src" href="([^"#]+)#L(\d+)"', page.read_text())]
    for href, line in set(links):
        target = out / href
        assert target.is_file(), href
        text = target.read_text()
        anchor = re.search(rf'<span id="L{line}"><a class="ln" href="#L{line}">{line}</a>(.*?)</span>', text)
        assert anchor, (href, line)
        file = html.unescape(re.search(r"<small>(.*?)</small>", text).group(1))
        expected = (root / file).read_text(errors="replace").splitlines()[int(line) - 1]
        assert html.unescape(anchor.group(1)) == expected, (href, line)
    href, line = links[0]
    source_dom, requested = chromium((out / href).resolve().as_uri() + f"#L{line}", work)
    assert requested == [] and f'id="L{line}"' in source_dom
    chromium((out / href).resolve().as_uri(), work, shots / "source.png", size="1400,900")
    broken = next(p for p in model_pages if 'v-broken-box' in p.read_text())
    chromium(broken.resolve().as_uri(), work, shots / "model-with-links.png", size="1400,1600")
    assert not any(str(root.resolve()) in p.read_text() for p in [index, *model_pages])  # no absolute path


@needs_chromium
def test_report_links_every_location_to_its_source_line(tmp_path):
    from tracer.api import scan_to_json

    tree = Path(__file__).resolve().parent.parent / "examples" / "broken-delegation"
    scan = scan_to_json(str(tree), cache_dir=str(tmp_path / "cache"))
    summary = build_report(scan, tmp_path / "out", tree)
    assert summary["sources"] > 0
    check_links_in_browser(tmp_path / "out", tree, tmp_path,
                           Path(os.environ.get("TRACER_SCREENSHOTS", tmp_path)) / "links")


@pytest.mark.real
@needs_chromium
def test_real_release_report_in_headless_chromium(request, tmp_path):
    engine = pytest.importorskip("tracer.api")
    root = real_release(request, "0.5.23")
    try:  # the suite's session-wide scan, shared with the other real tests
        scan = request.getfixturevalue("scanned_release")("0.5.23")
    except pytest.FixtureLookupError:
        scan = engine.scan_to_json(str(root))
    started = time.perf_counter()
    summary = build_report(scan, tmp_path / "out", root)
    seconds = time.perf_counter() - started
    print(f"report for sglang 0.5.23: {summary['pages']} pages, {summary['pictures']} pictures in {seconds:.2f} s")
    assert summary["graphviz"] and summary["pictures"] > 0
    assert seconds < 20, f"report took {seconds:.1f} s (goal 10 s on 2 cores)"
    assert any(m["verdict"] == "broken" and m["chain"] for m in scan["models"]), "0.5.23 should have a broken chain"
    shots = Path(os.environ.get("TRACER_SCREENSHOTS", tmp_path)) / "sglang-0.5.23"
    check_in_browser(scan, tmp_path / "out", tmp_path, shots)
    check_links_in_browser(tmp_path / "out", root, tmp_path, shots)


@pytest.mark.real
def test_release_report_counts_as_the_cli_does_and_puts_broken_sections_first(scanned_release, tmp_path):
    """0.5.23: the index's finding counts are scan's (one per place and message, every protocol
    named), labelled; each protocol card carries scan's summary line; Qwen3-VL's page opens with
    its broken DFlash section, its ok EAGLE-3 chain below."""
    from tracer.present.scan_json import from_json
    from tracer.present.text import TextOptions, format_text, protocol_summary

    data = scanned_release("0.5.23")
    typed = from_json(data)
    build_report(data, tmp_path / "r", None)
    index = (tmp_path / "r" / "index.html").read_text()
    found = format_text(typed, TextOptions()).splitlines()[-1]
    assert found.startswith("Found 1 error, 34 warnings.")
    assert "1 error, 34 warnings, 756 info, all protocols</small>" in index
    assert "1 error, 34 warnings, 756 info: one per place and message, as <code>tracer scan</code> counts them" in index
    for proto in typed.protocols:
        assert html.escape(protocol_summary(typed, proto)) in index, proto
    page = (tmp_path / "r" / "models" / "sglang.srt.models.qwen3_vl.Qwen3VLForConditionalGeneration.html").read_text()
    assert page.index('id="p-sglang-dflash"') < page.index('id="p-sglang-eagle3"')
    toc = page[page.index('class="toc"'):page.index("</div>", page.index('class="toc"'))]
    assert toc.index("sglang-dflash: broken") < toc.index("sglang-eagle3: ok")
