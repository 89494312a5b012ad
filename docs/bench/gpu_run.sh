#!/usr/bin/env bash
# Issue 33, part 6: the figures to take on a lent GPU machine, as one short run.
#
# The real model files cannot travel to that machine (64 MiB a call), so SmolLM2 and a
# larger llama of the same family go as packs (header and norms, about 2 MB each) and are
# rebuilt there with random quantized blocks of the same shapes (a forward pass's time
# depends on the shapes and types, not the values). Prepare, here:
#
#   cargo build --release -p cli --features burn-wgpu
#   mkdir -p gpu-run && strip -o gpu-run/strait target/release/strait && gzip -9f gpu-run/strait
#   python3 lm/reference/same_shapes.py pack assets/models/SmolLM2-135M-Instruct.Q4_1.gguf gpu-run/smollm2.pack
#   python3 lm/reference/larger_shapes.py assets/models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/llama-1b.gguf llama-1b
#   python3 lm/reference/same_shapes.py pack /tmp/llama-1b.gguf gpu-run/llama-1b.pack
#   mkdir -p gpu-run/debs && (cd gpu-run/debs && apt-get download libvulkan1)
#
# (the device's image may lack the Vulkan loader, which wgpu opens at run time; the script
# unpacks the carried one where `ldconfig` finds none), then run on the device, carrying
# `gpu-run`:
#
#   OUT=$OUT bash docs/bench/gpu_run.sh gpu-run
#
# Every line printed is one benchmark's JSON (or its error), also written to
# $OUT/gpu-figures.jsonl. TOKENS (default 128), SHORT (the profiled and batched runs'
# tokens, default 32) and LONG (the long context, default 1024) scale it down for a trial
# on lavapipe.
set -uo pipefail
dir=${1:?the folder holding strait and the packs}
out=${OUT:-$dir}
tokens=${TOKENS:-128}
long=${LONG:-1024}
short=${SHORT:-32}
# The binary travels gzipped (with burn's wgpu backend it is about 60 MB stripped, 16 MB
# gzipped; a call carries 64 MiB in all).
strait=$(mktemp -d)/strait
gunzip -c "$dir/strait.gz" >"$strait" && chmod +x "$strait" || exit 1
models=(smollm2 llama-1b)
for m in "${models[@]}"; do
  python3 lm/reference/same_shapes.py unpack "$dir/$m.pack" "/tmp/$m.gguf" || exit 1
done
if ! ldconfig -p | grep -q 'libvulkan\.so\.1'; then
  for f in "$dir"/debs/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
# The NVIDIA driver's Vulkan ICD, where the machine mounts it, unless one is named.
nv_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f "$nv_icd" ]; then
  export VK_DRIVER_FILES=$nv_icd
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
# Stop at once if wgpu finds no adapter: every run below would fail the same way. Its line
# names the adapter (lavapipe there would mean the NVIDIA ICD was not found).
"$strait" bench gpu --model "/tmp/${models[0]}.gguf" --tokens 2 | tee "$out/gpu-check.json" || exit 1
for m in "${models[@]}"; do
  f=/tmp/$m.gguf
  echo "# $m"
  # Decode at a short and a long context (f32 and f16 caches), then where the time goes,
  # then batches.
  "$strait" bench gpu --model "$f" --tokens "$tokens"
  "$strait" bench gpu --model "$f" --tokens "$tokens" --context "$long"
  "$strait" bench gpu --model "$f" --tokens "$tokens" --context "$long" --kv-cache f16
  # Four dispatches a block instead of five (the output product folded into attention),
  # at both contexts, beside the five above; then both profiles.
  "$strait" bench gpu --model "$f" --tokens "$tokens" --fold-output
  "$strait" bench gpu --model "$f" --tokens "$tokens" --context "$long" --fold-output
  "$strait" bench gpu --model "$f" --tokens "$short" --profile
  "$strait" bench gpu --model "$f" --tokens "$short" --profile --fold-output
  "$strait" bench gpu --model "$f" --tokens "$short" --batch 8
  # Prefill and decode beside burn and the CPU pass (every core).
  "$strait" bench decode --model "$f" --engines strait-cpu,strait-wgpu,burn-wgpu --tokens "$tokens"
done 2>&1 | tee "$out/gpu-figures.jsonl"
