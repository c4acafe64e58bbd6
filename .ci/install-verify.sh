#!/usr/bin/env bash
# What `tracer verify`'s CPU path needs, for tests/test_verify.py (marked real).
# The static tool itself needs none of this: torch and SGLang are imported only
# by the verify command. About 1-2 minutes on a fresh machine; the tests add
# about 2.5 minutes (two real releases, five families, four draft configs).
set -euo pipefail
cd "$(dirname "$0")/.."
# torch 2.13.0 is the CPU build that lies on this machine's disk (pip takes it
# from there); transformers 5.19.0 is sglang 0.5.23's pin. msgspec and pillow
# are hard imports of sglang, dill is imported at import time without being
# declared, openai is reached by DeepSeek's import chain.
python -m pip install -q torch==2.13.0 numpy transformers==5.19.0 msgspec pillow dill openai==2.8.0
# the releases the harness runs, unpacked whole (SGLang's import needs its
# non-Python files) into the test cache (tests/releases.py)
python - <<'PY'
import sys
sys.path.insert(0, "tests")
from releases import ReleaseUnavailable, release_dir

for version in ("0.5.23", "0.5.6"):
    try:
        print("sglang", version, "->", release_dir(version, full=True))
    except ReleaseUnavailable as exc:  # PyPI out of reach: the tests skip too
        print("sglang", version, "not cached:", exc)
# vLLM 0.33.0's .py files: tests/test_verify_vllm.py runs its LlamaForCausalLM on the CPU
try:
    print("vllm 0.33.0 ->", release_dir("0.33.0", "vllm"))
except ReleaseUnavailable as exc:
    print("vllm 0.33.0 not cached:", exc)
PY
