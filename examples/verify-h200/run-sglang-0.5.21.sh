#!/usr/bin/env bash
# `tracer verify --all` on sglang 0.5.21's DFlash classes (one H200, no network), as it ran
# for examples/verify-h200/sglang-0.5.21-dflash.*. Bundle ($BUNDLE, default build/verify-bundle):
#   whl/*.whl, sgwhl/*.whl   cp312 wheels the image lacks (pydantic, transformers 5.19.0, msgspec,
#                            dill, cloudpickle, pyyaml, click; apache-tvm-ffi 0.1.11, openai 2.8.0,
#                            jiter, distro, sniffio)
#   sglang-0.5.21.tar.xz     the sglang 0.5.21 wheel's files minus its .so
#   scan-sglang-0.5.21.json  `tracer scan --format json` of the release (made on the CPU box)
# Usage: bash examples/verify-h200/run-sglang-0.5.21.sh OUT_DIR [JOBS]
set -u
final=${1:?OUT_DIR}; jobs=${2:-14}
b=${BUNDLE:-build/verify-bundle}
dest=/tmp/sglang-verify-out
mkdir -p "$dest" /tmp/sg-0.5.21
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $b/whl/*.whl $b/sgwhl/*.whl >/dev/null 2>&1
tar -xJf $b/sglang-0.5.21.tar.xz -C /tmp/sg-0.5.21
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 SGLANG_FORCE_FUSED_OP_BACKEND=torch
echo "setup $(( $(date +%s) - t0 )) s"
name=sglang-0.5.21-dflash
cmd=(python3 -P -m tracer.verify.cli --all --device cuda -j "$jobs" --timeout 200 --memory 24000
     --work-dir /tmp/work-$name --include-broken --protocol sglang-dflash --framework /tmp/sg-0.5.21
     --scan-json $b/scan-sglang-0.5.21.json --draft-config examples/verify-h200/drafts/dflash-0-3-6
     -o "$dest/$name.json")
echo "${cmd[*]}" > "$dest/$name.command"
timeout "${RELEASE_LIMIT:-400}" "${cmd[@]}" > "$dest/$name.txt" 2> "$dest/$name.progress"
echo "$name: exit $? after $(( $(date +%s) - t0 )) s"
tail -12 "$dest/$name.txt"
tar -C /tmp -czf "$dest/$name-worker-logs.tgz" "work-$name" 2>/dev/null
mkdir -p "$final" && tar -C "$dest" -czf "$final/sglang-verify.tgz" .
