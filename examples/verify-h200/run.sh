#!/usr/bin/env bash
# The GPU runs behind examples/verify-h200/*.json, as they ran on the device
# machine (one H200, no network). Run from the repository root with the wheel
# bundle in .verify-wheels/ (see README.md beside this file).
# Usage: bash examples/verify-h200/run.sh OUT_DIR [RELEASE...]
set -u
out=${1:?OUT_DIR}; shift
releases=${*:-"0.5.23 0.5.6"}
mkdir -p "$out"
python3 - <<'PY' > "$out/machine.txt" 2>&1
import platform, torch, transformers
print("python", platform.python_version(), "torch", torch.__version__, "transformers",
      transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$out/machine.txt" 2>&1
# the packages the H200 image lacks, and each release in its own folder
pip install -q --no-index --no-deps --target /tmp/site $(ls .verify-wheels/*.whl | grep -v /sglang-) >/dev/null
# tracer laid out as its wheel installs it (rules/ -> tracer/_rules); python3 -P keeps
# the checkout itself off sys.path
rm -rf /tmp/tracer-src && mkdir -p /tmp/tracer-src && cp -r tracer /tmp/tracer-src/ &&
  cp -r rules /tmp/tracer-src/tracer/_rules && cp -r reports /tmp/tracer-src/tracer/_reports
export PYTHONPATH=/tmp/site:/tmp/tracer-src
export SGLANG_FORCE_FUSED_OP_BACKEND=torch
drafts=(ids-1-2-3 ids-0-2-4 ids-0-2-5-last no-ids)
entries=(Qwen2ForCausalLM LlamaForCausalLM Qwen3MoeForCausalLM DeepseekV2ForCausalLM Llama4ForConditionalGeneration)
for release in $releases; do
  pip install -q --no-index --no-deps --target /tmp/sg-$release .verify-wheels/sglang-$release-*.whl >/dev/null
  args=(--framework /tmp/sg-$release --device cuda --layers 6)
  for e in "${entries[@]}"; do args+=(--entry "$e"); done
  for d in "${drafts[@]}"; do args+=(--draft-config "examples/verify-h200/drafts/$d"); done
  cmd=(python3 -P -m tracer.verify.cli "${args[@]}" -o "$out/sglang-$release-cuda.json")
  echo "${cmd[*]}" > "$out/sglang-$release-cuda.command"
  timeout 240 "${cmd[@]}" > "$out/sglang-$release-cuda.txt" 2> "$out/sglang-$release-cuda.log"
  echo "sglang $release: exit $?"
  cat "$out/sglang-$release-cuda.txt"; tail -5 "$out/sglang-$release-cuda.log"
done
