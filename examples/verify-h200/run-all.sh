#!/usr/bin/env bash
# `tracer verify --all` on the GPU host (one H200, no network), as it ran for
# examples/verify-h200/sglang-*-all.* . Run from the repository root with the
# bundle in .verify-bundle/ (README.md beside this file says how it is made):
#   whl/*.whl                 packages the H200 image lacks (cp312)
#   sglang-0.5.23.tar.xz      the 0.5.23 wheel's files minus its compiled .so
#   sglang-0.5.6-*.whl        the 0.5.6 wheel (pure Python)
#   tracer-static.tgz         tracer's static engine at the commit the scans were made with
#   scan-0.5.23.json, scan-0.5.6.json   `tracer scan --format json` of each release
# Usage: bash examples/verify-h200/run-all.sh OUT_DIR [JOBS]
set -u
dest=${1:?OUT_DIR}
jobs=${2:-14}
b=.verify-bundle
mkdir -p "$dest"
t0=$(date +%s)
python3 - <<'PY' > "$dest/machine.txt" 2>&1
import platform, torch, transformers
print("python", platform.python_version(), "torch", torch.__version__, "transformers (image)",
      transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$dest/machine.txt" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $b/whl/*.whl >/dev/null 2>&1
mkdir -p /tmp/sg-0.5.23 /tmp/sg-0.5.6 /tmp/tracer-src
tar -xJf $b/sglang-0.5.23.tar.xz -C /tmp/sg-0.5.23 &
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/sg-0.5.6 $b/sglang-0.5.6-*.whl >/dev/null 2>&1
tar -xzf $b/tracer-static.tgz -C /tmp/tracer-src && rm -rf /tmp/tracer-src/tracer/verify && cp -r tracer/verify /tmp/tracer-src/tracer/verify
wait
export PYTHONPATH=/tmp/site:/tmp/tracer-src
export SGLANG_FORCE_FUSED_OP_BACKEND=torch PYTHONUNBUFFERED=1
python3 -c "import transformers; print('transformers (run)', transformers.__version__)" >> "$dest/machine.txt" 2>&1
echo "setup $(( $(date +%s) - t0 )) s"

all() {  # NAME TIMEOUT ARGS...: one `tracer verify --all`, its command, JSON and table
  local name=$1 limit=$2; shift 2
  local cmd=(python3 -P -m tracer.verify.cli --all --device cuda -j "$jobs" --timeout 200 --memory 24000
             --work-dir "/tmp/work-$name" "$@" -o "$dest/$name.json")
  echo "${cmd[*]}" > "$dest/$name.command"
  timeout "$limit" "${cmd[@]}" > "$dest/$name.txt" 2> "/tmp/work-$name.progress"
  echo "$name: exit $? after $(( $(date +%s) - t0 )) s"
  tail -25 "$dest/$name.txt"
}

all sglang-0.5.23-all 380 --include-broken --framework /tmp/sg-0.5.23 --scan-json $b/scan-0.5.23.json \
  --draft-config examples/verify-h200/drafts/ids-0-3-5 --draft-config examples/verify-h200/drafts/dflash-0-3-6
all sglang-0.5.6-all 150 --framework /tmp/sg-0.5.6 --scan-json $b/scan-0.5.6.json --protocol sglang-eagle3 \
  --draft-config examples/verify-h200/drafts/ids-0-3-5
# every worker's log, for the rows that say "error"
tar -C /tmp -czf "$dest/worker-logs.tgz" work-sglang-0.5.23-all work-sglang-0.5.6-all \
  work-sglang-0.5.23-all.progress work-sglang-0.5.6-all.progress 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
