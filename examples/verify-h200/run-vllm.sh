#!/usr/bin/env bash
# `tracer verify --all` on vLLM releases, on the GPU host (one H200, no network),
# as it ran for examples/verify-h200/vllm-*. Run from the repository root with the
# bundle in build/verify-bundle/ (README.md beside this file says how it is made):
#   whl/*.whl            packages the H200 image lacks (cp312): pydantic, pydantic_core,
#                        annotated_types, typing_inspection, typing_extensions, transformers
#                        5.19.0, cloudpickle, cachetools, msgspec, cbor2, dill, pyyaml, click
#                        (not huggingface_hub: 2.x needs httpx2; the image's is used)
#   vllm-0.33.0.tar.xz   the vllm 0.33.0 wheel's .py/.json files (no compiled extension)
#   vllm-0.11.0.tar.xz   the same of vllm 0.11.0
#   scan-vllm-*.json     `tracer scan --format json` of each release (made on the CPU box)
# Usage: bash examples/verify-h200/run-vllm.sh OUT_DIR JOBS NAME:RELEASE:DRAFT[:ENTRY,ENTRY...] ...
set -u
final=${1:?OUT_DIR}; jobs=${2:-14}; shift 2
dest=/tmp/vllm-verify-out  # everything lands here, then one tarball in OUT_DIR
b=${BUNDLE:-build/verify-bundle}
mkdir -p "$dest"
t0=$(date +%s)
python3 - <<'PY' > "$dest/machine-vllm.txt" 2>&1
import platform, torch, transformers
print("python", platform.python_version(), "torch", torch.__version__, "transformers (image)",
      transformers.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
PY
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$dest/machine-vllm.txt" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site $b/whl/*.whl >/dev/null 2>&1
for v in 0.33.0 0.11.0; do mkdir -p /tmp/vllm-$v && tar -xJf $b/vllm-$v.tar.xz -C /tmp/vllm-$v & done
wait
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
python3 -c "import transformers, pydantic; print('transformers (run)', transformers.__version__, 'pydantic', pydantic.__version__)" >> "$dest/machine-vllm.txt" 2>&1
echo "setup $(( $(date +%s) - t0 )) s"
for spec in "$@"; do
  IFS=: read -r name release draft entries <<< "$spec"
  extra=()
  for e in ${entries//,/ }; do extra+=(--entry "$e"); done
  cmd=(python3 -P -m tracer.verify.cli --all --device cuda -j "$jobs" --timeout 240 --memory 16000
       --work-dir "/tmp/work-$name" --framework /tmp/vllm-$release --scan-json $b/scan-vllm-$release.json
       --draft-config examples/verify-h200/drafts/$draft --include-broken "${extra[@]}" -o "$dest/$name.json")
  echo "${cmd[*]}" > "$dest/$name.command"
  timeout "${RELEASE_LIMIT:-400}" "${cmd[@]}" > "$dest/$name.txt" 2> "$dest/$name.progress"
  echo "$name: exit $? after $(( $(date +%s) - t0 )) s"
  tail -12 "$dest/$name.txt"
  tar -C /tmp -czf "$dest/$name-worker-logs.tgz" "work-$name" 2>/dev/null
done
echo "total $(( $(date +%s) - t0 )) s"
mkdir -p "$final" && tar -C "$dest" -czf "$final/vllm-verify.tgz" .
