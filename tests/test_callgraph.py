"""`tracer graph DIR --all`: the whole call graph against hand-written expected edges.

tests/data/callgraph/<category>/ holds one small program per category (PyCG's
micro-benchmark categories, our own code, plus SGLang shapes: a class passed as a
constructor parameter and overridden in a subclass, cross-module MRO, super(),
properties, callbacks), each with ``expected.json``: every edge between functions of
the program (the README there says how they were decided). Each program's graph must
be exactly that set; chosen edges must carry their kind; chosen edges must be absent.
Run in process (click's CliRunner), no cache: about a second in all.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from tracer.cli import main

DATA = Path(__file__).resolve().parent / "data" / "callgraph"
CATEGORIES = sorted(p.name for p in DATA.iterdir() if (p / "expected.json").is_file())

# Real edges a static resolver does not reach (strict: found one day, the test says so).
KNOWN_MISSED = {
    "dynamic": {("main", "main.handle_start")},  # globals()["handle_" + kind]: a computed name
}

# (category, caller, callee) -> the kind the edge must have.
KINDS = {
    ("constructor_param_class", "main", "main.LlamaForCausalLM.__init__"): "constructor",
    ("constructor_param_class", "main.LlamaForCausalLM.__init__", "main.LlamaModel.__init__"): "constructor",
    ("constructor_param_class", "main.Qwen2ForCausalLM.__init__", "main.LlamaForCausalLM.__init__"): "super",
    ("constructor_param_class", "main.LlamaForCausalLM.set_capture", "main.Qwen2Model.set_capture"): "call",
    ("super_calls", "main.RMSNorm.__init__", "main.Norm.__init__"): "super",
    ("super_calls", "main.RMSNorm.describe", "main.Layer.describe"): "super",
    ("decorators_wraps", "main", "main.timed"): "decorator",
    ("decorators_wraps", "main", "main.tag"): "decorator",
    ("callbacks", "main.apply_twice", "main.increment"): "callback",
    ("callbacks", "main.EventBus.publish", "main.on_start"): "callback",
    ("callbacks", "main.EventBus.publish", "main.Logger.record"): "callback",
    ("callbacks", "main.Timer.finish", "main.on_start"): "callback",
    ("callbacks", "main.order", "main.rank"): "callback",
    ("callbacks", "main", "main.EventBus.subscribe"): "call",
    ("args", "main.apply", "main.square"): "callback",
    ("properties", "main.last_layer", "main.Config.num_layers"): "implicit",
    ("generators", "main.drain", "main.Countdown.__next__"): "implicit",
    ("class_objects", "main.build_all", "main.Qwen.__init__"): "constructor",
    ("implicit_dunders", "main.ops", "main.Vec.__add__"): "implicit",
    ("implicit_dunders", "main.ops", "main.Vec.__init__"): "constructor",
    ("with_protocol", "main.run", "main.Managed.__exit__"): "implicit",
    ("next_protocol", "main.first", "main.Counter.__next__"): "implicit",
    ("callbacks_partial", "main.run", "main.scale"): "callback",
    ("getattr_hooks", "main.use", "main.Proxy.__getattr__"): "implicit",
    ("descriptors", "main.Model.use", "main.CachedProperty.__get__"): "implicit",
    ("descriptors", "main.Model.use", "main.Typed.__get__"): "implicit",
    ("descriptors", "main.CachedProperty.__get__", "main.Model.size"): "callback",
    ("reduce_callback", "main.total", "main.step"): "callback",
    ("getattr_caching", "main", "main.Types.__getattr__"): "implicit",
    ("generator_consumers", "main.make", "main.numbers"): "call",  # the maker
    ("generator_consumers", "main.total", "main.numbers"): "implicit",  # the consumer runs the body
    ("generator_consumers", "main.double", "main.numbers"): "implicit",
    ("generator_consumers", "main.Ticks.__next__", "main.Ticks.ticks"): "implicit",
}

# (category, caller, callee) that must NOT be in the graph (each a plausible wrong guess).
ABSENT = {
    ("mro", "main.Base.run", "main.Right.step"),  # Right.step is an override no instance reaches
    ("assignments", "main.local_rebind", "main.save"),  # the local rebinding hides the global
    ("callbacks", "main", "main.never_passed"),
    ("callbacks", "main.EventBus.publish", "main.never_passed"),
    ("constructor_param_class", "main.Qwen2ForCausalLM.__init__", "main.LlamaModel.__init__"),
    ("args", "main.shadowed", "main.square"),  # the parameter named square holds negate
    ("next_protocol", "main.first", "main.Counter.__iter__"),  # next(x) does not call x.__iter__
    ("implicit_dunders", "main.ops", "main.Vec.__radd__"),  # the left operand's __add__ answers
    ("implicit_dunders", "main.ops", "main.Vec.__iter__"),  # ``in`` asks __contains__ first
    ("synthesized_init", "main.build", "main.Plain.__post_init__"),  # its own __init__ calls no hook
    ("getattr_hooks", "main.Proxy.known", "main.Proxy.__getattr__"),  # self.real is found: no hook
    ("callbacks_partial", "main.run", "main.unused"),
    ("getattr_prefix", "main.Visitor.visit", "main.Visitor.other"),  # no visit_ prefix
    ("getattr_prefix", "main.Visitor.run", "main.Visitor.visit_Name"),
    ("duck_params", "main.ambiguous", "main.Other.parse"),  # Other is never created
    ("annotated_params", "main.parse_block", "main.InlineState.append"),  # the annotation admits block states
    ("annotated_params", "main.parse_inline", "main.BlockState.append"),
    ("annotated_params", "main.parse_inline", "main.SubBlock.append"),
    ("descriptors", "main.Model.use", "main.unrelated"),
    ("getattribute_dispatch", "main.Renderer.render", "main.Renderer.unused"),  # no token names it
    ("reduce_callback", "main.total", "main.never"),
    ("receiver_results", "main.Base.render", "main.Plain.text"),  # Base.render runs on an Html only
    ("receiver_results", "main.Plain.render", "main.Html.text"),
    ("generator_consumers", "main.never_consumed", "main.numbers"),  # made and dropped: never run
    ("generator_consumers", "main.Box.walk", "main.Box.lazy"),  # the list, before its lazy replacement
    ("generator_consumers", "main.double", "main.double"),  # no stage is handed its own output
    ("getattr_caching", "main.later", "main.Types.__getattr__"),  # the import already cached .alpha
    ("slice_assign", "main.keep", "main.numbers"),  # a generator sliced is no generator
    ("isinstance_guard", "main.first", "main.Base.name"),  # an Other fails isinstance(t, Named)
    ("star_args", "main.match", "main.Kind.__contains__"),  # (wrong) the Kind is kind, not values
}


def modules_of(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        names.add(".".join(parts))
    return names


def in_program(name: str, modules: set[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


def run_graph(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["graph", *args, "--no-cache"])
    return result.exit_code, result.stdout, result.stderr


@cache
def graph_of(category: str) -> dict:
    code, out, err = run_graph(str(DATA / category), "--all", "--format", "json")
    assert code == 0, err
    return json.loads(out)


def program_edges(category: str) -> set[tuple[str, str]]:
    modules = modules_of(DATA / category)
    return {(u, v) for u, v in graph_of(category)["edges"] if in_program(u, modules) and in_program(v, modules)}


def expected_edges(category: str) -> set[tuple[str, str]]:
    expected = json.loads((DATA / category / "expected.json").read_text())
    return {(u, v) for u, vs in expected.items() for v in vs}


@pytest.mark.parametrize("category", CATEGORIES)
def test_edges_are_exactly_the_expected_ones(category):
    found, expected = program_edges(category), expected_edges(category)
    missed = expected - found
    assert found - expected == set(), f"edges not in the program: {sorted(found - expected)}"
    assert missed == KNOWN_MISSED.get(category, set()), f"missed: {sorted(missed)}"


def test_every_category_the_issue_names_has_a_program():
    wanted = {"args", "assignments", "classes", "decorators", "dicts", "direct_calls", "functions", "generators",
              "imports", "kwargs", "lambdas", "lists", "mro", "returns", "super_calls", "properties",
              "constructor_param_class", "callbacks"}
    assert wanted <= set(CATEGORIES)


@pytest.mark.parametrize(("category", "caller", "callee"), sorted(KINDS))
def test_edge_kinds(category, caller, callee):
    kinds = graph_of(category)["edge_kinds"]
    assert kinds.get(f"{caller}->{callee}") == KINDS[category, caller, callee]


@pytest.mark.parametrize(("category", "caller", "callee"), sorted(ABSENT))
def test_wrong_edges_are_absent(category, caller, callee):
    assert [caller, callee] not in graph_of(category)["edges"]
    assert (caller, callee) not in expected_edges(category)  # the table itself stays honest


def test_every_kind_is_one_of_the_documented_ones():
    kinds = {k for c in CATEGORIES for k in graph_of(c).get("edge_kinds", {}).values()}
    assert kinds <= {"call", "constructor", "super", "decorator", "callback", "implicit"}
    assert {"call", "constructor", "super", "decorator", "callback"} <= kinds


def test_from_depth_gives_a_neighbourhood():
    folder = str(DATA / "constructor_param_class")
    code, out, err = run_graph(folder, "--all", "--from", "Qwen2ForCausalLM.__init__", "--depth", "1")
    assert code == 0, err
    data = json.loads(out)
    assert data["edges"] == [["main.Qwen2ForCausalLM.__init__", "main.LlamaForCausalLM.__init__"]]
    assert data["stats"]["from"] == ["main.Qwen2ForCausalLM.__init__"]
    deeper = json.loads(run_graph(folder, "--all", "--from", "Qwen2ForCausalLM.__init__", "--depth", "2")[1])
    assert ["main.LlamaForCausalLM.__init__", "main.LlamaModel.__init__"] in deeper["edges"]
    assert "main.LlamaForCausalLM.set_capture" not in deeper["nodes"]  # not called from there
    callers = json.loads(run_graph(folder, "--all", "--from", "Qwen2Model.set_capture", "--depth", "1",
                                   "--callers")[1])
    assert callers["edges"] == [["main.LlamaForCausalLM.set_capture", "main.Qwen2Model.set_capture"]]
    code, _, err = run_graph(folder, "--all", "--from", "no_such_function")
    assert code == 2 and "no function of that name" in err


def test_graphml_and_pictures(tmp_path):
    folder = str(DATA / "super_calls")
    code, out, err = run_graph(folder, "--all", "--format", "graphml")
    assert code == 0, err
    g = nx.parse_graphml(out)
    assert g.edges["main.RMSNorm.__init__", "main.Norm.__init__"]["kind"] == "super"
    code, _, err = run_graph(folder, "--all", "--format", "svg", "-o", str(tmp_path / "all.svg"))
    assert code == 2 and "--from" in err  # the whole graph is no picture
    code, _, err = run_graph(folder, "--all", "--from", "RMSNorm", "--format", "dot", "-o", str(tmp_path / "n.dot"))
    assert code == 0, err
    text = (tmp_path / "n.dot").read_text()
    assert "RMSNorm.forward" in text and "Norm.forward" in text
    code, _, err = run_graph(folder, "--all", "--from", "RMSNorm.describe", "--format", "svg",
                             "-o", str(tmp_path / "n.svg"))
    assert code == 0, err
    picture = tmp_path / "n.svg"
    assert (tmp_path / "n.dot").is_file()
    if picture.is_file():  # Graphviz installed (CI has it)
        assert "Layer.describe" in picture.read_text() and "super" in picture.read_text()


def test_parameters_typed_by_their_attributes_are_counted_and_unknown_ones_stay_unbound():
    stats = graph_of("duck_params")["stats"]
    assert stats["params_typed_by_attributes"] == 2  # md (Markdown) and p (BlockParser); m has no class
    assert stats["unbound_by_cause"].get("attribute") == 1  # m.group(0): no class has group


def test_from_solves_only_the_neighbourhood_and_finds_it_across_modules():
    """--from solves on demand: the defining file, the modules its reached code imports (round by
    round), the files naming a caller; the neighbourhood matches the whole graph's."""
    folder = str(DATA / "imports")
    data = json.loads(run_graph(folder, "--all", "--from", "publish", "--depth", "2")[1])
    assert data["edges"] == [["pkg.api.publish", "pkg.tools.slugify"], ["pkg.tools.slugify", "util.clean"]]
    assert data["stats"]["solved_on_demand"] and data["stats"]["files_solved"] == 3 < data["stats"]["files_total"]
    alone = json.loads(run_graph(folder, "--all", "--from", "shout", "--depth", "1")[1])
    assert alone["edges"] == [["util.shout", "util.clean"]] and alone["stats"]["files_solved"] == 1
    callers = json.loads(run_graph(folder, "--all", "--from", "clean", "--depth", "1", "--callers")[1])
    assert {("main", "util.clean"), ("pkg.tools.slugify", "util.clean"), ("util.shout", "util.clean")} <= {
        tuple(e) for e in callers["edges"]}
    # a subclass's mixin, two modules away through the subclass's bases: self.post() reaches it
    mixin = json.loads(run_graph(str(DATA / "mro_cross_module"), "--all", "--from", "BaseModel.forward",
                                 "--depth", "1")[1])
    assert ["models.base.BaseModel.forward", "models.mixins.CaptureMixin.post"] in mixin["edges"]


def test_what_the_narrowings_hold_back_is_counted():
    # parse_block holds back the inline state; parse_inline the block state and its subclass
    assert graph_of("annotated_params")["stats"]["arguments_narrowed_by_annotations"] == 3
    # Base.lookup is solved apart for Plain's receivers (clones.py): nothing of Html's reaches Plain's
    # caller, nothing is left to narrow (tests/test_callgraph_clones.py narrows it with no copies)
    assert graph_of("receiver_results")["stats"]["results_narrowed_by_receiver"] == 0
    assert graph_of("receiver_results")["stats"]["methods_cloned_per_receiver"] == 1
