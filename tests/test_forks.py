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
    text = format_text(context.result, TextOptions())  # (-q prints the findings alone: no summary)
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


# -- forks: detected by structure, packs relocated ------------------------------------------------

FORK = EXAMPLES / "renamed-fork"


def test_renamed_fork_is_detected_by_structure(tmp_path):
    data = scan_to_json(str(FORK), ["sglang-eagle3"], cache_dir=str(tmp_path))
    assert data["framework"] == {"name": "sglang", "version": "0.0.0", "package_root": "forkgl", "fork_of": "sglang"}
    assert sorted(m["entry"] for m in data["models"]) == ["forkgl.srt.models.llama.LlamaForCausalLM",
                                                          "forkgl.srt.models.qwen2.Qwen2ForCausalLM"]
    out = tracer("scan", str(FORK), "--protocol", "sglang-eagle3", "--cache-dir", str(tmp_path))
    assert out.returncode == 1, out.stderr
    assert "Scanned sglang 0.0.0 (fork: package `forkgl`) in" in out.stdout
    assert "forkgl/srt/model_executor/model_runner.py:43:13: call-order [error]" in out.stdout


def _two_forks(tmp_path: Path) -> Path:
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(FORK / "forkgl", tree / "forkgl")
    shutil.copytree(FORK / "forkgl", tree / "othergl")
    return tree


def test_several_fork_candidates_ask_for_package(tmp_path):
    tree = _two_forks(tmp_path)
    out = tracer("scan", str(tree), "--protocol", "sglang-eagle3", "--no-cache")
    assert out.returncode == 2
    assert "several packages look like a supported framework: forkgl (sglang), othergl (sglang)" in out.stderr
    assert "--package NAME" in out.stderr
    out = tracer("scan", str(tree), "--protocol", "sglang-eagle3", "--package", "othergl", "--format", "json",
                 "--no-cache")
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    assert data["framework"]["package_root"] == "othergl" and data["framework"]["fork_of"] == "sglang"
    assert {m["entry"].split(".")[0] for m in data["models"]} == {"othergl"}


def test_no_framework_error_says_what_was_found_and_missing(tmp_path):
    # a package holding srt/models but none of the pack's runner modules: not taken for SGLang
    lone = tmp_path / "lone" / "mypkg"
    (lone / "srt" / "models").mkdir(parents=True)
    (lone / "__init__.py").write_text("")
    out = tracer("scan", str(lone.parent), "--no-cache")
    assert out.returncode == 2
    assert "mypkg/srt/models exists, but mypkg has no mypkg.srt.managers.scheduler or " \
           "mypkg.srt.model_executor.model_runner (sglang's layout)" in out.stderr
    assert "--package mypkg scans it as sglang" in out.stderr
    empty = tmp_path / "empty" / "something"
    empty.mkdir(parents=True)
    (empty / "__init__.py").write_text("")
    out = tracer("scan", str(empty.parent), "--no-cache")
    assert out.returncode == 2
    assert "vllm: a package named vllm holding model_executor/models" in out.stderr
    assert "Python packages found here: something" in out.stderr


def _pack(tmp_path: Path, **changes: str) -> Path:
    text = (REPO / "rules" / "sglang-eagle3.toml").read_text()
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "pack.toml"
    path.write_text(text)
    return path


def test_a_pack_that_matches_nothing_is_an_error(tmp_path):
    """Issue 26: a half-edited pack printed `No findings.` and exited 0 on a tree with broken models."""
    # the package renamed, the module paths not: its modules match nothing of the fork
    pack = _pack(tmp_path, **{'name = "sglang-eagle3"': 'name = "fork-eagle3"',
                              'package = "sglang"': 'package = "forkgl"'})
    out = tracer("scan", str(FORK), "--rules", str(pack), "--protocol", "fork-eagle3", "--no-cache")
    assert out.returncode == 2, out.stdout
    assert "pack fork-eagle3's modules (sglang.srt.*) match no module of this tree (its package is forkgl)" in out.stderr
    # the entry rule names a variable the tree does not have, while the setter occurs
    pack = _pack(tmp_path, **{'name = "sglang-eagle3"': 'name = "fork-eagle3"',
                              'variable = "EntryClass"': 'variable = "ModelEntry"'})
    out = tracer("scan", str(FORK), "--rules", str(pack), "--protocol", "fork-eagle3", "--no-cache")
    assert out.returncode == 2, out.stdout
    assert ("pack fork-eagle3 finds no entry class in this tree although its setter set_eagle3_layers_to_capture "
            "occurs in") in out.stderr
    assert "module variable ModelEntry in" in out.stderr


def test_replace_builtin_exists(tmp_path):
    pack = _pack(tmp_path, **{'description = "': 'description = "(a local copy) '})
    out = tracer("scan", str(FORK), "--rules", str(pack), "--no-cache")
    assert out.returncode == 2
    assert "pass --replace-builtin to use it instead" in out.stderr
    out = tracer("scan", str(FORK), "--rules", str(pack), "--replace-builtin", "--protocol", "sglang-eagle3",
                 "--format", "json", "--no-cache")
    assert out.returncode == 1, out.stderr
    assert len(json.loads(out.stdout)["models"]) == 2


def test_relocated_pack_moves_every_module_path():
    vllm = next(p for p in load_protocols() if p.name == "vllm-eagle3")
    moved = vllm.relocated("myfork")
    assert (moved.package, moved.fork_of, moved.scope) == ("myfork", "vllm", "myfork")
    assert moved.registry_module == "myfork.model_executor.models.registry"
    assert all(r.startswith("myfork.") for r in moved.runner_roots + moved.runner_modules + moved.entry_modules)
    assert moved.pp_indices_function == "myfork.distributed.utils.get_pp_indices"
    assert moved.relocated("myfork") is moved and vllm.relocated("vllm") is vllm
    assert [p.package for p in load_protocols(["vllm-eagle3"], package="other")] == ["other"]


def _renamed_vllm(tmp_path: Path) -> Path:
    """vLLM 0.33.0 as a fork would ship it: the package, its imports and the registry factory renamed."""
    import re
    import shutil

    from conftest import release_dir

    tree = tmp_path / "fork"
    shutil.copytree(Path(release_dir("0.33.0", "vllm")) / "vllm", tree / "myfork")
    for path in (tree / "myfork").rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        text = re.sub(r"\bvllm\b", "myfork", text).replace("init_vllm_registered_model", "init_myfork_registered_model")
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return tree


@pytest.mark.real
def test_renamed_vllm_fork_gets_the_releases_verdicts(tmp_path, vllm_33):
    """vLLM 0.33.0 renamed (package `myfork`, imports, `init_myfork_registered_model`): every model's
    verdict and findings are the release's, without a pack edit (the factory is found by its shape)."""
    original = vllm_33
    fork = scan_to_json(str(_renamed_vllm(tmp_path)), cache_dir=str(tmp_path / "c2"))
    assert fork["framework"]["fork_of"] == "vllm" and fork["framework"]["package_root"] == "myfork"

    def rows(data: dict, prefix: str) -> set[tuple]:
        return {(m["entry"].split(".", 1)[1], m["verdict"], tuple(m["findings"]), m.get("graph_capture"))
                for m in data["models"] if m["entry"].startswith(prefix)}
    assert len(rows(original, "vllm.")) > 250
    assert rows(fork, "myfork.") == rows(original, "vllm.")
    assert sum(m["verdict"] == "ok" for m in fork["models"]) >= 70


# -- registry rows through `import ... as`, platform `if`, PEP 562 ---------------------------------

def test_every_registered_name_is_a_row(tmp_path):
    """A class the registry names twice (its own name and an alias bound under a platform `if`)
    is two rows, each traced on its own bindings; an alias module and a PEP 562 `__getattr__`
    give their class's row."""
    data = scan_to_json(str(EXAMPLES / "registry-aliases"), ["vllm-eagle3"], cache_dir=str(tmp_path))
    rows = {m["entry"].rsplit(".", 1)[-1]: m for m in data["models"]}
    assert sorted(rows) == ["DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "LazyForCausalLM",
                            "LlamaForCausalLM", "QwenAliasForCausalLM", "QwenImplForCausalLM"]
    glm = rows["GlmMoeDsaForCausalLM"]
    assert glm["entry"] == "vllm.model_executor.models.deepseek_v32.GlmMoeDsaForCausalLM"
    assert [(a["condition"], a["entry"].rsplit(".", 1)[-1]) for a in glm["alternatives"]] == [
        ("current_platform.is_rocm()", "LlamaForCausalLM"),
        ("not (current_platform.is_rocm())", "DeepseekV32ForCausalLM")]
    deepseek = rows["DeepseekV32ForCausalLM"]
    assert [a["entry"].split(".")[-3] for a in deepseek["alternatives"]] == ["rocm", "nvidia"]
    assert rows["QwenAliasForCausalLM"]["state_owner"].endswith("qwen_impl.QwenImplModel")


@pytest.fixture(scope="module")
def vllm_33(release_cache):
    from conftest import release_dir

    return scan_to_json(str(release_dir("0.33.0", "vllm")), cache_dir=str(release_cache))


@pytest.mark.real
def test_vllm_alias_row_of_deepseek_v32(vllm_33):
    """vLLM 0.33.0 registers GlmMoeDsaForCausalLM -> vllm.models.deepseek_v32, whose __init__ binds it
    `from .nvidia.model import DeepseekV32ForCausalLM as GlmMoeDsaForCausalLM` under `if is_cuda()`."""
    glm = next(m for m in vllm_33["models"] if m["entry"] == "vllm.models.deepseek_v32.GlmMoeDsaForCausalLM")
    assert glm["verdict"] == "ok"
    assert [a["entry"] for a in glm["alternatives"]] == [
        "vllm.models.deepseek_v32.nvidia.model.DeepseekV32ForCausalLM",
        "vllm.models.deepseek_v32.amd.model.DeepseekV32ForCausalLM",
        "vllm.model_executor.models.deepseek_v2.GlmMoeDsaForCausalLM"]
    assert any(m["entry"] == "vllm.models.deepseek_v32.DeepseekV32ForCausalLM" for m in vllm_33["models"])


# -- the version from the distribution's metadata; draft heads out of an error's classes ------------

def test_version_from_metadata_when_version_py_holds_a_placeholder(tmp_path):
    import shutil

    tree = tmp_path / "wheel"
    shutil.copytree(FORK / "forkgl", tree / "forkgl")
    (tree / "forkgl" / "version.py").write_text(
        'try:\n    from ._version import __version__\nexcept ImportError:\n    __version__ = "dev"\n')
    out = tracer("scan", str(tree), "--protocol", "sglang-eagle3", "--format", "json", "--no-cache")
    assert json.loads(out.stdout)["framework"]["version"] == ""  # nothing says: no version, never "dev"
    meta = tree / "forkgl-1.4.2.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: forkgl\nVersion: 1.4.2\n")
    (meta / "RECORD").write_text("forkgl/__init__.py,,\n")
    out = tracer("scan", str(tree), "--protocol", "sglang-eagle3", "--format", "json", "--no-cache")
    assert json.loads(out.stdout)["framework"]["version"] == "1.4.2"
    (tree / "forkgl" / "version.py").write_text('__version__ = "0.0.0"\n')  # a placeholder literal
    out = tracer("scan", str(tree), "--protocol", "sglang-eagle3", "--no-cache")
    assert "Scanned sglang 1.4.2 (fork: package `forkgl`)" in out.stdout


def test_an_error_never_lists_a_draft_head():
    from tracer.analysis.pipeline import without_draft_heads

    shared = Finding("broken-delegation", "error", "p", "m.Target", "base.py", 3, 0, "msg", "",
                     entries=("m.Target", "m.DraftHead", "m.Other"))
    draft_first = Finding("dead-write", "error", "p", "m.DraftHead", "base.py", 9, 0, "msg", "",
                          entries=("m.DraftHead", "m.Target"))
    info = Finding("dead-write", "info", "p", "m.DraftHead", "base.py", 9, 0, "msg (draft head)", "",
                   entries=("m.DraftHead",))
    cleaned = without_draft_heads([shared, draft_first, info], {"m.DraftHead"})
    assert cleaned[0].entries == ("m.Target", "m.Other")
    assert (cleaned[1].entry, cleaned[1].entries) == ("m.Target", ("m.Target",))
    assert cleaned[2] == info


# -- explain says what the scan says ---------------------------------------------------------------

CONFIGS = Path(__file__).parent / "data" / "configs"


def _target(tmp_path: Path, architecture: str) -> Path:
    config = json.loads((CONFIGS / "qwen2.5-7b" / "config.json").read_text())
    config["architectures"] = [architecture]
    folder = tmp_path / architecture
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_explain_names_a_wrapper_without_the_setter(tmp_path):
    """Issue 26: explain blamed the runner ("the runner does not read that key") for a model the
    scan knows has no setter at all."""
    out = tracer("explain", str(EXAMPLES / "broken-delegation"), "--protocol", "sglang-eagle3", "--no-cache",
                 "--target-config", str(_target(tmp_path, "Llama4ForCausalLM")),
                 "--draft-config", str(CONFIGS / "draft-eagle-config"))
    assert out.returncode == 1, out.stderr
    assert ("scan: missing: no set_eagle3_layers_to_capture in the MRO of Llama4ForCausalLM: start-up fails where "
            "the runner calls it (sglang/srt/model_executor/model_runner.py:36)") in out.stdout
    assert "the runner does not read that key" not in out.stdout


def test_explain_repeats_the_scans_broken_verdict_and_graph_answer(tmp_path):
    out = tracer("explain", str(EXAMPLES / "broken-delegation"), "--protocol", "sglang-eagle3", "--no-cache",
                 "--target-config", str(_target(tmp_path, "LlavaForConditionalGeneration")),
                 "--draft-config", str(CONFIGS / "draft-eagle-config"))
    assert out.returncode == 1
    assert "  scan: broken: " in out.stdout and "broken-delegation (error)" in out.stdout
    out = tracer("explain", str(EXAMPLES / "call-order"), "--protocol", "sglang-eagle3", "--no-cache",
                 "--target-config", str(_target(tmp_path, "LlamaForCausalLM")),
                 "--draft-config", str(CONFIGS / "draft-eagle-config"))
    assert ("scan: replayed CUDA graphs capture the fallback layers "
            "(sglang/srt/model_executor/cuda_graph_runner.py:27)") in out.stdout


# -- plugins ----------------------------------------------------------------------------------------

OVERLAY = EXAMPLES / "plugin-overlay"


def test_plugin_registrations_and_runner_subclass(tmp_path):
    """The plugin's registration by call replaces the host's Mixtral row with its own class; its
    worker's runner subclass is the runner walked (its call site, its dropped ids, graph_capture)."""
    out = tracer("scan", str(OVERLAY), "--plugin", str(OVERLAY / "plugin"), "--protocol", "vllm-eagle3",
                 "--cache-dir", str(tmp_path))
    assert out.returncode == 1, out.stderr
    assert ("plugin/npu_plugin/worker/model_runner.py:10:9: ids-dropped [error] vllm-eagle3: NPUModelRunner.load_model calls "
            "set_aux_hidden_state_layers(get_eagle3_default_aux_hidden_state_layers())") in out.stdout
    assert ("vllm-eagle3: 1 target model (1 ok) — replayed CUDA graphs capture the fallback layers: "
            "model_runner.py:10; 1 without the setter") in out.stdout
    alone = scan_to_json(str(OVERLAY), ["vllm-eagle3"], cache_dir=str(tmp_path))
    assert sorted(m["entry"].rsplit(".", 1)[-1] for m in alone["models"]) == ["LlamaForCausalLM", "MixtralForCausalLM"]
    assert {m["graph_capture"] for m in alone["models"]} == {"configured"}  # the host's own GPU runner


def test_plugins_from_tool_tracer(tmp_path):
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(OVERLAY, tree)
    (tree / "pyproject.toml").write_text('[tool.tracer]\nplugins = ["plugin"]\nprotocols = ["vllm-eagle3"]\n')
    out = tracer("scan", str(tree), "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert out.returncode == 1, out.stderr
    assert "npu_plugin.models.mixtral.NPUMixtralForCausalLM" in {m["entry"] for m in json.loads(out.stdout)["models"]}


def test_a_folder_that_is_no_plugin_is_refused(tmp_path):
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "__init__.py").write_text("")
    (other / "pkg-1.0.dist-info").mkdir()
    (other / "pkg-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\npkg = pkg:main\n")
    out = tracer("scan", str(OVERLAY), "--plugin", str(other), "--no-cache")
    assert out.returncode == 2
    assert ("its metadata declares none of vllm's plugin entry points (vllm.general_plugins, vllm.platform_plugins): "
            "not a plugin of vllm") in out.stderr


@pytest.mark.real
def test_vllm_ascend_on_vllm(tmp_path):
    """vllm-ascend 0.23.0 on vLLM 0.23.0 (issue 26): DeepseekV4ForCausalLM is registered by call to
    AscendDeepseekV4ForCausalLM, which is not SupportsEagle3; NPUModelRunner.load_model sets the
    layers (model_runner_v1.py:3767) and falls back to the model's defaults without a log (:3766)."""
    from conftest import release_dir

    host, plugin = release_dir("0.23.0", "vllm"), release_dir("0.23.0", "vllm_ascend")
    data = scan_to_json(str(host), ["vllm-eagle3"], cache_dir=str(tmp_path), plugins=[str(plugin)])
    rows = {m["entry"]: m for m in data["models"]}
    assert rows["vllm_ascend.models.deepseek_v4.AscendDeepseekV4ForCausalLM"]["verdict"] == "missing"
    assert "vllm.models.deepseek_v4.DeepseekV4ForCausalLM" not in rows
    assert rows["vllm_ascend.models.llama_eagle3_vwn.Eagle3VwnLlamaForCausalLM"]["draft"] is True
    site = next(s for s in data["call_sites"] if s["file"] == "vllm_ascend/worker/model_runner_v1.py")
    assert (site["line"], site["caller"], site["passes_ids"], site["order"] is not None) == (
        3767, "vllm_ascend.worker.model_runner_v1.NPUModelRunner.load_model", True, True)
    assert any(f["slug"] == "silent-fallback" and (f["file"], f["line"]) == ("vllm_ascend/worker/model_runner_v1.py", 3766)
               for f in data["findings"])
    assert sum(m["verdict"] == "ok" for m in data["models"]) >= 40
    # the pipeline-parallel patch (patch_eagle3_pp_aux.py:227) replaces the decoder's forward per class
    kimi = rows["vllm.model_executor.models.kimi_k25.KimiK25ForConditionalGeneration"]["chain"][-1]
    llama = rows["vllm.model_executor.models.llama.LlamaForCausalLM"]["chain"][-1]
    assert kimi["qualname"] == "vllm_ascend.patch.worker.patch_eagle3_pp_aux._make_deepseek_v2_forward.pp_eagle3_forward"
    assert llama["qualname"] == "vllm_ascend.patch.worker.patch_eagle3_pp_aux._make_eagle_mixin_forward.pp_eagle3_forward"
    assert kimi["kind"] == llama["kind"] == "read"
    assert "when should_configure_aux_hidden_states and pp_group.world_size > 1" in kimi["resolved_by"]


def test_explain_on_a_fork_is_the_originals_explain(tmp_path):
    target = _target(tmp_path, "Qwen2ForCausalLM")
    args = ["--protocol", "sglang-eagle3", "--no-cache", "--target-config", str(target),
            "--draft-config", str(CONFIGS / "draft-eagle-config"), "--format", "json"]
    original = json.loads(tracer("explain", str(EXAMPLES / "call-order"), *args).stdout)
    fork = json.loads(tracer("explain", str(FORK), *args).stdout)
    assert fork["entry"] == "forkgl.srt.models.qwen2.Qwen2ForCausalLM"
    assert [(f["slug"], f["file"].replace("forkgl/", "sglang/"), f["line"]) for f in fork["findings"]] == \
        [(f["slug"], f["file"], f["line"]) for f in original["findings"]]
    assert fork["graph_layers"] == original["graph_layers"] and fork["effective_layers"] == original["effective_layers"]


def test_a_platform_whose_runner_lives_outside_the_tree_is_named(tmp_path):
    """vllm-tpu: vllm/platforms/tpu.py hands TPUs to tpu-inference; the GPU runner sites shown do not
    run there (pack key [runner] external_runtimes)."""
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(OVERLAY / "vllm", tree / "vllm")
    out = tracer("scan", str(tree), "--protocol", "vllm-eagle3", "--no-cache")
    assert "note:" not in out.stdout
    (tree / "vllm" / "platforms").mkdir()
    (tree / "vllm" / "platforms" / "__init__.py").write_text("")
    (tree / "vllm" / "platforms" / "tpu.py").write_text("from tpu_inference.platforms import TpuPlatform\n")
    out = tracer("scan", str(tree), "--protocol", "vllm-eagle3", "--format", "json", "--no-cache")
    assert json.loads(out.stdout)["notes"] == [
        "on tpu the runner is tpu_inference's (vllm/platforms/tpu.py hands the platform to it), outside this "
        "tree: the runner call sites shown do not run there"]
    out = tracer("scan", str(tree), "--protocol", "vllm-eagle3", "--no-cache")
    assert "  note: on tpu the runner is tpu_inference's" in out.stdout


# -- run-time replacement of a forward ---------------------------------------------------------------

def _overlay_copy(tmp_path: Path) -> Path:
    import shutil

    tree = tmp_path / "overlay"
    shutil.copytree(OVERLAY, tree)
    return tree


def _last_hop(data: dict, entry_suffix: str) -> dict:
    model = next(m for m in data["models"] if m["entry"].endswith(entry_suffix))
    return model["chain"][-1]


def test_a_patched_forward_is_the_reader_where_it_applies(tmp_path):
    data = scan_to_json(str(OVERLAY), ["vllm-eagle3"], cache_dir=str(tmp_path), plugins=[str(OVERLAY / "plugin")])
    hop = _last_hop(data, "llama.LlamaForCausalLM")
    assert (hop["kind"], hop["qualname"], hop["file"], hop["line"]) == (
        "read", "npu_plugin.patch.pp_forward._make_mixin_forward.pp_forward", "plugin/npu_plugin/patch/pp_forward.py", 8)
    assert hop["resolved_by"] == (
        "run-time replacement of inner_model.forward at plugin/npu_plugin/patch/pp_forward.py:29 (patch_pp_forward "
        "when not getattr(inner_model, '_pp_forward_patched', False); called from NPUModelRunner.load_model at "
        "plugin/npu_plugin/worker/model_runner.py:14 when self.vllm_config.parallel_config.pipeline_parallel_size "
        "> 1): it reads aux_hidden_state_layers")


def test_a_patched_forward_that_never_reads_the_state_is_named(tmp_path):
    tree = _overlay_copy(tmp_path)
    patch = tree / "plugin" / "npu_plugin" / "patch" / "pp_forward.py"
    text = patch.read_text()
    patch.write_text(text.replace("self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)",
                                  "pass").replace("self._maybe_add_hidden_state([], 0, hidden_states, residual)", "[]"))
    data = scan_to_json(str(tree), ["vllm-eagle3"], cache_dir=str(tmp_path / "c"), plugins=[str(tree / "plugin")])
    hop = _last_hop(data, "llama.LlamaForCausalLM")
    assert hop["kind"] == "unresolved"
    assert hop["reason"].endswith("the replacement never reads aux_hidden_state_layers, so nothing is captured "
                                  "where it applies")


def test_an_untyped_patch_is_not_taken_for_the_models_forward(tmp_path):
    """`layer.forward = wrapper(...)` with no isinstance test choosing it: the patched object is not
    known to be the state owner (vllm-ascend patches linear layers this way)."""
    tree = _overlay_copy(tmp_path)
    patch = tree / "plugin" / "npu_plugin" / "patch" / "pp_forward.py"
    patch.write_text(patch.read_text().replace(
        "    if isinstance(inner_model, EagleModelMixin):\n        make_forward = _make_mixin_forward\n"
        "    else:\n        return False\n", "    make_forward = _make_mixin_forward\n"))
    data = scan_to_json(str(tree), ["vllm-eagle3"], cache_dir=str(tmp_path / "c"), plugins=[str(tree / "plugin")])
    assert "run-time replacement" not in json.dumps(_last_hop(data, "llama.LlamaForCausalLM"))


def test_package_forces_a_tree_the_structure_check_refused(tmp_path):
    lone = tmp_path / "lone" / "mypkg"
    (lone / "srt" / "models").mkdir(parents=True)
    (lone / "__init__.py").write_text("")
    out = tracer("scan", str(lone.parent), "--package", "mypkg", "--no-cache")
    assert out.returncode == 2
    assert "no Python file under mypkg/srt/ (pack sglang-" in out.stderr and "nothing to scan" in out.stderr
    (lone / "srt" / "__init__.py").write_text("")
    (lone / "srt" / "models" / "llama.py").write_text("class LlamaForCausalLM:\n    pass\n\nEntryClass = LlamaForCausalLM\n")
    out = tracer("scan", str(lone.parent), "--package", "mypkg", "--protocol", "sglang-eagle3", "--format", "json",
                 "--no-cache", "--fail-on", "never")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["framework"]["fork_of"] == "sglang"
    assert [(m["entry"], m["verdict"]) for m in data["models"]] == [("mypkg.srt.models.llama.LlamaForCausalLM", "missing")]
