"""Chains on real SGLang releases, checked against hand-verified ground truth
(tests/data/real_expectations.json: every line read in the release's source)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import RELEASES

from tracer.checks import CATALOGUE as RULES

EXPECTED = json.loads((Path(__file__).parent / "data" / "real_expectations.json").read_text())

pytestmark = pytest.mark.real


# Known gaps between the engine and the hand-verified truth, each worth an issue.
KNOWN_GAPS = {
    ("0.5.16", "sglang-dflash", "Qwen3VLForConditionalGeneration"):
        "a delegation to a class without the method is an 'unresolved'-kind hop, the truth records a delegate hop",
    ("0.5.23", "sglang-dflash", "Qwen3VLForConditionalGeneration"):
        "a delegation to a class without the method is an 'unresolved'-kind hop, the truth records a delegate hop",
    ("0.5.23", "sglang-dflash", "KimiK3ForConditionalGeneration"):
        "DFlash routed through a self call that writes another attribute: flag check misfires",
}


def _cases():
    for version in RELEASES:
        for model in EXPECTED[version]["models"]:
            key = (version, model["protocol"], model["entry"].rsplit(".", 1)[-1])
            marks = [pytest.mark.xfail(reason=KNOWN_GAPS[key], strict=True)] if key in KNOWN_GAPS else []
            yield pytest.param(version, model, marks=marks,
                               id=f"{version}-{model['protocol']}-{model['entry'].rsplit('.', 1)[-1]}")


def _model(scan: dict, entry: str, protocol: str) -> dict:
    found = [m for m in scan["models"] if m["entry"] == entry and m["protocol"] == protocol]
    assert found, f"{entry} ({protocol}) is not among the scanned entry classes"
    return found[0]


@pytest.mark.parametrize("version,expected", list(_cases()))
def test_chain_matches_hand_verified_truth(scanned_release, version, expected):
    scan = scanned_release(version)
    got = _model(scan, expected["entry"], expected["protocol"])
    # The truth notes problems that had no slug when it was written ("extra_issues",
    # "slug: why"); where tracer has that slug now, the finding must be there and
    # the chain is broken.
    now_slugs = [i.split(":")[0] for i in expected.get("extra_issues", []) if i.split(":")[0] in RULES]
    want_verdict = "broken" if now_slugs and expected["verdict"] == "ok" else expected["verdict"]
    if expected.get("draft_model") and want_verdict != "missing":
        # a draft head is not judged; the truth's verdict is its chain's own
        assert got["verdict"] == "draft" and got["draft"], got["reason"]
        got = dict(got, verdict=got["chain_verdict"])
    assert got["verdict"] == want_verdict, got["reason"]
    for slug in now_slugs:
        assert slug in got["findings"]
    if expected["verdict"] == "missing":
        assert got["chain"] == []
        return
    want_hops = [(h["kind"], h["qualname"], h["file"], h["line"]) for h in expected["chain"]
                 if h["kind"] in ("setter", "delegate", "write")]
    got_hops = [(h["kind"], h["qualname"], h["file"], h["line"]) for h in got["chain"]
                if h["kind"] in ("setter", "delegate", "write")]
    assert got_hops == want_hops
    want_reads = {(h["qualname"], h["line"]) for h in expected["chain"] if h["kind"] == "read"}
    got_reads = {(h["qualname"], h["line"]) for h in got["chain"] if h["kind"] == "read"}
    assert want_reads <= got_reads, f"missing readers: {want_reads - got_reads}"
    if expected.get("state_owner"):
        assert got["state_owner"] == expected["state_owner"]
    for slug in expected.get("findings", []):
        assert slug in got["findings"], f"{slug} expected on {expected['entry']}: {expected.get('why')}"


@pytest.mark.parametrize("version", RELEASES)
def test_runner_call_sites(scanned_release, version):
    scan = scanned_release(version)
    got = {(s["protocol"], s["file"], s["line"]): s for s in scan["call_sites"]}
    for site in EXPECTED[version]["call_sites"]:
        key = (site["protocol"], site["file"], site["line"])
        assert key in got, f"call site {key} not found"
        assert got[key]["caller"] == site["caller"]
        assert got[key]["passes_ids"] == site["passes_ids"]
        assert got[key]["before_graph_capture"] == site["before_graph_capture"], site.get("note")


@pytest.mark.parametrize("version", RELEASES)
def test_every_entry_class_gets_a_verdict(scanned_release, version):
    scan = scanned_release(version)
    assert scan["models"], "no entry classes found"
    assert {m["verdict"] for m in scan["models"]} <= {"ok", "broken", "unknown", "missing", "draft"}
    for model in scan["models"]:
        # a draft head (and only one) is "draft", never broken: its findings are info
        assert (model["verdict"] == "draft") == (model["draft"] and "chain_verdict" in model)
        if model["draft"]:
            assert model["verdict"] in ("draft", "missing")
        if model["verdict"] == "broken":
            assert any(f["severity"] == "error" and model["entry"] in f["entries"] and
                       f["protocol"] == model["protocol"] for f in scan["findings"]), model["entry"]
        if (model.get("chain_verdict") or model["verdict"]) == "unknown":
            # never unknown without saying which hop and why
            assert model["reason"] and any(h["kind"] == "unresolved" for h in model["chain"])
    assert scan["input_errors"] == []


def test_old_runner_orders_graph_capture_before_configured_ids(scanned_release):
    """sglang 0.5.6: init_device_graphs() runs before set_eagle3_layers_to_capture(ids),
    and CudaGraphRunner.__init__ calls the setter without ids (sglang #22836)."""
    scan = scanned_release("0.5.6")
    slugs = {(f["slug"], f["file"], f["line"]) for f in scan["findings"]}
    assert ("call-order", "sglang/srt/model_executor/model_runner.py", 552) in slugs
    assert ("ids-dropped", "sglang/srt/model_executor/cuda_graph_runner.py", 339) in slugs


def test_new_runner_is_in_order(scanned_release):
    scan = scanned_release("0.5.23")
    assert not [f for f in scan["findings"] if f["slug"] in ("call-order",)]
    eagle = [s for s in scan["call_sites"] if s["protocol"] == "sglang-eagle3"]
    assert eagle and all(s["passes_ids"] and s["before_graph_capture"] for s in eagle)


def test_dflash_is_absent_before_it_existed(scanned_release):
    scan = scanned_release("0.5.6")
    assert scan["protocols"] == ["sglang-eagle3"]
    assert scan["protocols_absent"] == ["sglang-dflash", "sglang-dspark"]
