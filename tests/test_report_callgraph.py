"""The report's callgraph.dot/svg is the value-flow call graph (`graph --all`) around the
capture setters, not the protocol graph: each setter of the tree with what calls it and
what it calls, edges the values prove. Run through the CLI on examples/ok, the way a user
runs `tracer report PATH -o DIR`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import main

OK_TREE = Path(__file__).resolve().parent.parent / "examples" / "ok"
PREFIX = "sglang.srt."


def _graph(dot: str) -> tuple[dict[str, str], set[tuple[str, str]], set[str]]:
    """(node id -> full name, edges by full name, highlighted full names) of a written callgraph.dot."""
    names = dict(re.findall(r'^(n\d+) \[label=.*?tooltip="([^"]+)"', dot, re.M))
    starts = {names[i] for i in re.findall(r'^(n\d+) \[.*penwidth=2', dot, re.M)}
    edges = {(names[u], names[v]) for u, v in re.findall(r"^(n\d+) -> (n\d+)", dot, re.M)}
    return names, edges, starts


def test_report_draws_the_setters_value_flow_neighbourhood(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", str(OK_TREE), "-o", str(out), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    names, edges, starts = _graph((out / "callgraph.dot").read_text())
    setter = "set_eagle3_layers_to_capture"
    # every setter the tree defines is a start, and nothing else is
    assert starts and all(n.endswith("." + setter) for n in starts)
    assert PREFIX + "models.kimi_k25.KimiK25ForConditionalGeneration." + setter in starts
    # the runner's call reaches the entry classes' setters (receiver seeded with the entry classes)
    runner = PREFIX + "model_executor.model_runner.ModelRunner.initialize"
    assert (runner, PREFIX + "models.qwen2.Qwen2ForCausalLM." + setter) in edges
    # a wrapper's delegation: Kimi-K2.5 -> DeepSeek-V2 (its language model)
    assert (PREFIX + "models.kimi_k25.KimiK25ForConditionalGeneration." + setter,
            PREFIX + "models.deepseek_v2.DeepseekV2ForCausalLM." + setter) in edges
    # a value-flow graph's nodes are functions, not the protocol graph's state attributes
    assert not any("layers_to_capture" in n and not n.endswith(setter) for n in names.values())
    index = (out / "index.html").read_text()
    assert "value-flow call graph" in index and "protocol subgraph" not in index
    # the runner's call rests on the entry-class seed: dashed, and counted apart in the caption and key
    dot = (out / "callgraph.dot").read_text()
    ids = {name: i for i, name in names.items()}
    runner_edge = re.search(rf"^{ids[runner]} -> {ids[PREFIX + 'models.qwen2.Qwen2ForCausalLM.' + setter]} \[(.*)\];$",
                            dot, re.M)
    assert runner_edge and "dashed" in runner_edge.group(1)
    assert re.search(r"\d+ calls are proven by values; \d+ \(dashed\) are assumed: the runner", index)
    assert "dashed red = assumed" in dot


def test_report_from_saved_json_without_a_tree_keeps_the_protocol_graph(tmp_path):
    runner = CliRunner()
    scan_json = tmp_path / "scan.json"
    scanned = runner.invoke(main, ["scan", str(OK_TREE), "--format", "json", "-o", str(scan_json),
                                   "--cache-dir", str(tmp_path / "c")])
    assert scan_json.is_file(), scanned.output
    result = runner.invoke(main, ["report", "--from", str(scan_json), "-o", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "r" / "index.html").read_text()
    assert "protocol subgraph" in index and "--source-root" in index


@pytest.mark.real
def test_report_of_sglang_0_5_23_draws_the_setters_callers_and_delegations(tmp_path, release_cache):
    """SGLang 0.5.23 (the wheel): the runner's configure_aux_hidden_state_capture calls the entry
    classes' setters, Kimi-K2.5's setter calls DeepSeek-V2's, and the picture is a neighbourhood
    (tens of functions), not the whole program."""
    from conftest import release_dir

    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", str(release_dir("0.5.23")), "-o", str(out), "-q",
                                       "--cache-dir", str(release_cache)])
    assert result.exit_code == 0, result.output
    names, edges, starts = _graph((out / "callgraph.dot").read_text())
    setter = "set_eagle3_layers_to_capture"
    configure = PREFIX + "model_executor.model_runner_components.attention_backend_setup.configure_aux_hidden_state_capture"
    kimi = PREFIX + "models.kimi_k25.KimiK25ForConditionalGeneration." + setter
    deepseek = PREFIX + "models.deepseek_v2.DeepseekV2ForCausalLM." + setter
    assert {kimi, deepseek} <= starts
    assert (kimi, deepseek) in edges
    assert (configure, kimi) in edges and (configure, deepseek) in edges
    assert 20 < len(names) < 200
    if shutil.which("dot"):
        assert (out / "callgraph.svg").read_text().lstrip().startswith("<?xml")
