#!/usr/bin/env bash
# The GPU runs behind examples/verify-h200/*.json, as they ran on the device
# machine (one H200, no network). Run from the repository root with the wheel
# bundle in .verify-wheels/ (see README.md beside this file).
# Usage: bash examples/verify-h200/run.sh OUT_DIR [RELEASE...]
set -u
dest=${1:?OUT_DIR}; shift
out=/tmp/verify-out  # everything lands here, then one tarball in OUT_DIR
releases=${*:-"0.5.23 0.5.6"}
rm -rf "$out"; mkdir -p "$out" "$dest"
python3 - <<'PY' > "$out/machine.txt" 2>&1
import platform, torch, transformers
print("python", platform.python_version(), "torch", torch.__version__, "transformers",
      transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$out/machine.txt" 2>&1
# the packages the H200 image lacks, and each release in its own folder
pip install -q --no-index --no-deps --target /tmp/site $(ls .verify-wheels/*.whl | grep -v /sglang-) >/dev/null 2>&1
# tracer laid out as its wheel installs it (rules/ -> tracer/_rules); python3 -P keeps
# the checkout itself off sys.path
rm -rf /tmp/tracer-src && mkdir -p /tmp/tracer-src && cp -r tracer /tmp/tracer-src/ &&
  cp -r rules /tmp/tracer-src/tracer/_rules && cp -r reports /tmp/tracer-src/tracer/_reports
export PYTHONPATH=/tmp/site:/tmp/tracer-src
export SGLANG_FORCE_FUSED_OP_BACKEND=torch
d=examples/verify-h200/drafts
t=examples/verify-h200/targets

verify() {  # NAME ARGS...: one tracer verify process, its command, JSON, table and log
  local name=$1; shift
  local cmd=(python3 -P -m tracer.verify.cli "$@" --device cuda -o "$out/$name.json")
  echo "${cmd[*]}" > "$out/$name.command"
  timeout 280 "${cmd[@]}" > "$out/$name.txt" 2> "$out/$name.log"
  echo "$name: exit $?"
  cat "$out/$name.txt"
}

for release in $releases; do
  pip install -q --no-index --no-deps --target /tmp/sg-$release .verify-wheels/sglang-$release-*.whl >/dev/null 2>&1
  fw=(--framework /tmp/sg-$release)
  # five families (one a wrapper that delegates to its language model), four
  # draft conventions, tiny random configs of six layers
  verify sglang-$release-cuda "${fw[@]}" --layers 6 \
    --entry Qwen2ForCausalLM --entry LlamaForCausalLM --entry Qwen3MoeForCausalLM \
    --entry DeepseekV2ForCausalLM --entry Llama4ForConditionalGeneration \
    --draft-config $d/ids-1-2-3 --draft-config $d/ids-0-2-4 \
    --draft-config $d/ids-0-2-5-last --draft-config $d/no-ids
  # real architectures shrunk in sizes only: every layer index is production's
  verify sglang-$release-cuda-deepseek-v3-61-layers "${fw[@]}" --entry DeepseekV3ForCausalLM \
    --target-config $t/deepseek-v3 --draft-config $d/ids-2-30-58 --draft-config $d/no-ids
  verify sglang-$release-cuda-qwen2.5-7b-28-layers "${fw[@]}" --entry Qwen2ForCausalLM \
    --target-config $t/qwen2.5-7b --draft-config $d/ids-1-13-24 --draft-config $d/no-ids
done
tar -C "$out" -czf "$dest/verify-h200.tgz" .
