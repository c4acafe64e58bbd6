"""How each call-graph edge is known (`graph --all`'s ``edge_provenance``, the report's dashed
edges): "values" where a value the solver followed proves it; "entry-classes" where the call's
receiver is the runner's model, taken to be one of the pack's entry classes (SGLang builds it
from a registry at run time); "attributes" where a parameter no call fills is taken to be a
class having the attributes read on it. A receiver built in a model from another package's
registry (MindSpore's ``import_model_classes("sgl_mindspore.models")`` in SGLang 0.5.23) is no
runner's: it is never seeded, so it never binds to the tree's own models."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import main

SETTER = "set_eagle3_layers_to_capture"
DUCKS = Path(__file__).resolve().parent / "data" / "callgraph" / "duck_params"

FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/registry.py": '''
        import importlib

        def import_model_classes(package_name):
            found = {}
            module = importlib.import_module(package_name)
            found[module.EntryClass.__name__] = module.EntryClass
            return found
    ''',
    "sglang/srt/models/llama.py": f'''
        class LlamaModel:
            def {SETTER}(self, layer_ids):
                self.layers_to_capture = layer_ids

        class LlamaForCausalLM:
            def __init__(self):
                self.model = LlamaModel()

            def {SETTER}(self, layer_ids):
                self.model.{SETTER}(layer_ids)

        EntryClass = LlamaForCausalLM
    ''',
    "sglang/srt/models/plugin_backend.py": f'''
        from sglang.srt.models.registry import import_model_classes

        class PluginForCausalLM:
            def __init__(self, config):
                arch = import_model_classes("other_pkg.models")[config.architectures[0]]
                self.model = arch(config)

            def {SETTER}(self, layer_ids):
                self.model.{SETTER}(layer_ids)

        EntryClass = [PluginForCausalLM]
    ''',
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/model_runner.py": f'''
        from sglang.srt.model_executor.loader import get_model

        class ModelRunner:
            def __init__(self, config):
                self.model = get_model(config)

            def initialize(self, ids):
                self.model.{SETTER}(ids)
    ''',
    "sglang/srt/model_executor/loader.py": '''
        from sglang.srt.models.registry import import_model_classes

        def get_model(config):
            return import_model_classes("sglang.srt.models")[config.architectures[0]](config)
    ''',
}
RUNNER = "model_executor.model_runner.ModelRunner.initialize"
LLAMA = f"models.llama.LlamaForCausalLM.{SETTER}"
LLAMA_MODEL = f"models.llama.LlamaModel.{SETTER}"
PLUGIN = f"models.plugin_backend.PluginForCausalLM.{SETTER}"


def tree(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path / "sglang" / "srt"


def graph(*args: str) -> dict:
    result = CliRunner().invoke(main, ["graph", *args, "--all", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_runners_seeded_receiver_is_assumed_and_a_proven_delegation_is_values(tmp_path):
    data = graph(str(tree(tmp_path)), "--format", "json")
    proof = data["edge_provenance"]
    # every edge has its provenance, keyed as edge_kinds is
    assert set(proof) == set(data["edge_kinds"]) == {f"{u}->{v}" for u, v in data["edges"]}
    # the runner's self.model comes from a registry lookup by computed name: taken to be an entry class
    assert proof[f"{RUNNER}->{LLAMA}"] == "entry-classes"
    assert proof[f"{RUNNER}->{PLUGIN}"] == "entry-classes"
    # LlamaForCausalLM's self.model = LlamaModel(): a value proves the delegation
    assert proof[f"{LLAMA}->{LLAMA_MODEL}"] == "values"
    assert data["stats"]["edges_assumed_by_reason"] == {"entry-classes": 2}
    assert all(why in ("values", "entry-classes", "attributes") for why in proof.values())


def test_a_class_from_another_packages_registry_never_binds_to_the_trees_models(tmp_path):
    data = graph(str(tree(tmp_path)), "--format", "json")
    edges = {tuple(e) for e in data["edges"]}
    # PluginForCausalLM's self.model is a class import_model_classes("other_pkg.models") picks at
    # run time: no model of this tree, and it is no runner's receiver: unbound, not guessed
    assert not {v for u, v in edges if u == PLUGIN}
    assert (PLUGIN, PLUGIN) not in edges and (PLUGIN, LLAMA) not in edges
    assert data["stats"]["receivers_seeded_with_entry_classes"] == 1  # the runner's only
    # the same on demand (--from): the solved neighbourhood holds only the plugin's file
    around = graph(str(tree(tmp_path)), "--from", f"PluginForCausalLM.{SETTER}", "--depth", "1", "--format", "json")
    assert around["edges"] == []


def test_a_parameter_typed_by_its_attributes_is_assumed():
    data = graph(str(DUCKS), "--format", "json")
    proof = data["edge_provenance"]
    # plugin(md): md.block.register(...): md taken to be a Markdown (no call passes one)
    assert proof["main.plugin->main.BlockParser.register"] == "attributes"
    assert proof["main.ambiguous->main.BlockParser.parse"] == "attributes"
    assert data["stats"]["edges_assumed_by_reason"] == {"attributes": 2}
    assert sum(why == "values" for why in proof.values()) == len(proof) - 2  # the rest are proven


def test_graphml_carries_the_proof(tmp_path):
    import networkx as nx

    result = CliRunner().invoke(main, ["graph", str(tree(tmp_path)), "--all", "--no-cache", "--format", "graphml"])
    g = nx.parse_graphml(result.stdout)
    assert g.edges[RUNNER, LLAMA]["proof"] == "entry-classes"
    assert g.edges[LLAMA, LLAMA_MODEL]["proof"] == "values"


def test_the_picture_draws_assumed_edges_dashed_and_counts_them(tmp_path):
    out = tmp_path / "n.svg"
    result = CliRunner().invoke(main, ["graph", str(tree(tmp_path)), "--all", "--no-cache", "--from", RUNNER,
                                       "--depth", "2", "--format", "svg", "-o", str(out)])
    assert result.exit_code in (0, 2), result.stderr  # 2: no Graphviz here; the DOT file is written
    dot = (tmp_path / "n.dot").read_text()
    names = dict(re.findall(r'^(n\d+) \[label=.*?tooltip="([^"]+)"', dot, re.M))
    style = {(names[u], names[v]): rest for u, v, rest in re.findall(r"^(n\d+) -> (n\d+) \[(.*)\];$", dot, re.M)}
    assert "dashed" in style[RUNNER, LLAMA]
    assert "dashed" not in style[LLAMA, LLAMA_MODEL]
    # boxed by module, the runner's first; the key says what dashed means, with the count
    clusters = re.findall(r'^subgraph cluster_\w+ \{\nlabel="([^"]+)"', dot, re.M)
    assert clusters[0] == "model_executor.model_runner"
    assert "models.llama" in clusters
    assert re.search(r"dashed red = assumed \(2\): the runner's receiver", dot)


def test_plain_dot_marks_assumed_edges(tmp_path):
    out = tmp_path / "all.dot"
    result = CliRunner().invoke(main, ["graph", str(tree(tmp_path)), "--all", "--no-cache", "--format", "dot",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert f'"{RUNNER}" -> "{LLAMA}" [label="call", style=dashed, proof="entry-classes"];' in text
    assert f'"{LLAMA}" -> "{LLAMA_MODEL}" [label="call"];' in text


def test_a_fork_under_another_package_name_is_still_seeded_at_its_runner(tmp_path):
    """The seed's modules are the packs' runner modules (sglang.srt.model_executor.*); a tree holding
    none of them (a fork renamed) is seeded anywhere, as before, and the edge is still marked."""
    root = tmp_path / "fork"
    for name, text in FILES.items():
        path = root / name.replace("sglang/", "myfork/", 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).replace("sglang.", "myfork."))
    data = graph(str(root / "myfork" / "srt"), "--format", "json")
    assert data["edge_provenance"][f"{RUNNER}->{LLAMA}"] == "entry-classes"
