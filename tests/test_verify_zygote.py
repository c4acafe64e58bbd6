"""The CPU fork server of ``tracer verify --all`` (tracer/verify/zygote.py): its
children are workers as a fresh process was — a worker that fails reports it, one
over its time budget is killed as a group and counted, the others' results stand."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from test_verify import needs_torch

from tracer.verify import allrun
from tracer.verify.zygote import Zygote


@needs_torch
@pytest.mark.real
def test_zygote_children_fail_and_die_alone(sglang_release_full, tmp_path):
    root = str(sglang_release_full("0.5.23"))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1")
    zygote = Zygote.start(root, "cpu", env, str(tmp_path), str(tmp_path / "zygote.log"))
    assert zygote is not None, (tmp_path / "zygote.log").read_text()[-2000:]

    def job(name: str, entry: str) -> allrun.Job:
        out = tmp_path / f"{name}.jsonl"
        cmd = [sys.executable, "-m", "tracer.verify.worker", "--framework", root, "--device", "cpu",
               "--entry", entry, "--protocol", "sglang-eagle3=0,3,5", "--out", str(out)]
        return allrun.Job(entry, ["sglang-eagle3"], cmd, out, tmp_path / f"{name}.log")

    missing, slow = job("missing", "NoSuchModelForCausalLM"), job("slow", "Qwen3ForCausalLM")
    try:
        started = time.time()
        allrun.run_jobs([missing], 1, 300, 4096, env, str(tmp_path), None, zygote=zygote)
        # the preloaded child answers in far less than a fresh import of torch and SGLang
        assert time.time() - started < 60
        allrun.run_jobs([slow], 1, 0.5, 4096, env, str(tmp_path), None, zygote=zygote)
    finally:
        zygote.close()
    assert missing.proc.pid != zygote.proc.pid and missing.rc == 0, missing.log.read_text()[-2000:]
    records = [json.loads(line) for line in missing.out.read_text().splitlines()]
    assert "NoSuchModelForCausalLM" in records[0]["error"] and records[-1]["done"]
    assert slow.killed == "time budget of 0.5 s spent" and slow.rc == -9
    assert allrun._death(slow) == "worker killed: time budget of 0.5 s spent"
    with pytest.raises(ProcessLookupError):  # the group is gone, not left behind
        os.killpg(slow.proc.pid, 0)
