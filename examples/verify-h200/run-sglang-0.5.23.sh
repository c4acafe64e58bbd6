#!/usr/bin/env bash
# `tracer verify --all` on sglang 0.5.23, EAGLE-3 and DFlash in one run (one H200, no network),
# as it ran for examples/verify-h200/sglang-0.5.23-all.* (issue #27 item 3).
# Bundle ($BUNDLE, default build/verify-bundle):
#   whl/*.whl, sgwhl/*.whl   cp312 wheels the image lacks (pydantic, transformers 5.19.0, msgspec,
#                            dill, cloudpickle, pyyaml, click; apache-tvm-ffi 0.1.11, openai 2.8.0,
#                            jiter, distro, sniffio)
#   sglang-0.5.23.tar.xz     the sglang 0.5.23 wheel's files minus its .so
#   scan-sglang-0.5.23.json  the release's scan (tracer.verify.static.scan_to_json, made on the CPU box)
# $TRACER_SRC (default: the checkout) holds the tracer package that runs.
# Usage: bash examples/verify-h200/run-sglang-0.5.23.sh OUT_DIR [JOBS]
set -u
final=${1:?OUT_DIR}; jobs=${2:-14}
b=${BUNDLE:-build/verify-bundle}
src=${TRACER_SRC:-$PWD}
dest=/tmp/sglang-verify-out
mkdir -p "$dest" /tmp/sg-0.5.23
t0=$(date +%s)
python3 - <<'PY' > "$dest/machine.txt" 2>&1
import platform, torch, transformers
print("python", platform.python_version(), "torch", torch.__version__, "transformers (image)",
      transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$dest/machine.txt" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $b/whl/*.whl $b/sgwhl/*.whl >/dev/null 2>&1
tar -xJf $b/sglang-0.5.23.tar.xz -C /tmp/sg-0.5.23
export PYTHONPATH=/tmp/site:$src PYTHONUNBUFFERED=1 SGLANG_FORCE_FUSED_OP_BACKEND=torch
python3 -c "import transformers; print('transformers (run)', transformers.__version__)" >> "$dest/machine.txt" 2>&1
echo "setup $(( $(date +%s) - t0 )) s"
name=sglang-0.5.23-all
cmd=(python3 -P -m tracer.verify.cli --all --device cuda -j "$jobs" --timeout 200 --memory 24000
     --work-dir /tmp/work-$name --include-broken --framework /tmp/sg-0.5.23
     --scan-json $b/scan-sglang-0.5.23.json --draft-config examples/verify-h200/drafts/ids-0-3-5
     --draft-config examples/verify-h200/drafts/dflash-0-3-6 -o "$dest/$name.json")
echo "${cmd[*]}" > "$dest/$name.command"
timeout "${RELEASE_LIMIT:-450}" "${cmd[@]}" > "$dest/$name.txt" 2> "$dest/$name.progress"
echo "$name: exit $? after $(( $(date +%s) - t0 )) s"
tail -40 "$dest/$name.txt"
tar -C /tmp -czf "$dest/$name-worker-logs.tgz" "work-$name" 2>/dev/null
mkdir -p "$final" && tar -C "$dest" -czf "$final/sglang-verify.tgz" .
