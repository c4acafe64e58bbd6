"""The chain memo: a warm scan after an edit re-traces only the chains that read the
edited file, and says exactly what a scan without any cache says."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tracer.config.packs import load_protocols
from tracer.resolve.resolver import ClassRef
from tracer.resolve.tree import open_project

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODELS = "sglang/srt/models"


def scan(tree: Path, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "tracer", "scan", str(tree), "--format", "json", *extra],
                          capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout)


def same_answer(warm: dict, cold: dict) -> None:
    assert warm["models"] == cold["models"]
    assert warm["findings"] == cold["findings"]
    assert warm["call_sites"] == cold["call_sites"]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_an_edit_retraces_only_the_chains_that_read_the_file(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "ok", tree)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    first = scan(tree, *cache)
    total = first["stats"]["chains_traced"]
    assert first["stats"]["chains_reused"] == 0 and total >= 10

    # The Kimi-K2.5 wrapper now drops the ids: only chains that read kimi_k25.py run again.
    kimi = tree / MODELS / "kimi_k25.py"
    edit(kimi, "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
         "self.language_model.set_eagle3_layers_to_capture()")
    warm = scan(tree, *cache)
    assert 0 < warm["stats"]["chains_traced"] < total / 2
    assert warm["stats"]["chains_reused"] + warm["stats"]["chains_traced"] == total
    same_answer(warm, scan(tree, "--no-cache"))
    line = next(i for i, row in enumerate(kimi.read_text().splitlines(), 1)
                if "set_eagle3_layers_to_capture()" in row)
    kimi_model = next(m for m in warm["models"] if m["entry"].endswith("KimiK25ForConditionalGeneration"))
    assert kimi_model["verdict"] == "broken" and "ids-dropped" in kimi_model["findings"]
    assert any(f["slug"] == "ids-dropped" and f["file"] == f"{MODELS}/kimi_k25.py" and f["line"] == line
               for f in warm["findings"])

    # A base class many wrappers inherit from: every chain through it is traced again.
    deepseek = tree / MODELS / "deepseek_v2.py"
    edit(deepseek, "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
         "self.model.layers_to_capture = [2, 4, 6]")
    again = scan(tree, *cache)
    same_answer(again, scan(tree, "--no-cache"))
    deepseek_model = next(m for m in again["models"] if m["entry"].endswith("DeepseekV2ForCausalLM"))
    assert "ids-ignored" in deepseek_model["findings"] or "ids-dropped" in deepseek_model["findings"]

    # A new file changes the set of modules: everything is traced again, and still agrees.
    (tree / MODELS / "newmodel.py").write_text(
        "from sglang.srt.models.llama import LlamaForCausalLM\n\n\n"
        "class NewModel(LlamaForCausalLM):\n    pass\n\n\nEntryClass = NewModel\n")
    added = scan(tree, *cache)
    assert added["stats"]["chains_reused"] == 0
    same_answer(added, scan(tree, "--no-cache"))
    assert any(m["entry"].endswith("NewModel") and m["verdict"] == "ok" for m in added["models"])


def test_a_memoised_answer_reports_the_modules_behind_it(tmp_path):
    """A chain that takes another chain's MRO from the resolver's memo still depends on
    every module that MRO was read from (else an edit of a base would be missed)."""
    project, resolver = open_project(EXAMPLES / "ok", load_protocols(["sglang-eagle3"]), use_cache=False)
    deepseek = ClassRef("sglang.srt.models.deepseek_v2", "DeepseekV2ForCausalLM")
    with project.reads.record() as first:
        resolver.mro(deepseek)
    assert "sglang.srt.models.deepseek_v2" in first
    with project.reads.record() as second:  # answered from the memo: no module is read again
        classes, _ = resolver.mro(deepseek)
    assert deepseek in classes and first <= second
    resolver.resolve_name("sglang.srt.models.kimi_k25", "DeepseekV3ForCausalLM")  # memoised, recorded by no one
    with project.reads.record() as outer, project.reads.record() as inner:
        symbol = resolver.resolve_name("sglang.srt.models.kimi_k25", "DeepseekV3ForCausalLM")
    assert symbol.module == "sglang.srt.models.deepseek_v2"
    assert {"sglang.srt.models.kimi_k25", "sglang.srt.models.deepseek_v2"} <= inner <= outer
