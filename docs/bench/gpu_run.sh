#!/usr/bin/env bash
# Issue 33, part 6: the figures to take on a lent GPU machine, as one short run.
#
# The real model files cannot travel to that machine (64 MiB a call), so SmolLM2 and a
# larger llama of the same family go as packs (header and norms, about 2 MB each) and are
# rebuilt there with random quantized blocks of the same shapes (a forward pass's time
# depends on the shapes and types, not the values). Prepare, here:
#
#   cargo build --release -p cli --features burn-wgpu
#   mkdir -p gpu-run && cp target/release/strait gpu-run/
#   python3 lm/reference/same_shapes.py pack assets/models/SmolLM2-135M-Instruct.Q4_1.gguf gpu-run/smollm2.pack
#   python3 lm/reference/larger_shapes.py assets/models/SmolLM2-135M-Instruct.Q4_1.gguf /tmp/llama-1b.gguf llama-1b
#   python3 lm/reference/same_shapes.py pack /tmp/llama-1b.gguf gpu-run/llama-1b.pack
#
# then run on the device, carrying `gpu-run`:
#
#   OUT=$OUT bash docs/bench/gpu_run.sh gpu-run
#
# Every line printed is one benchmark's JSON (or its error), also written to
# $OUT/gpu-figures.jsonl. TOKENS (default 128) and LONG (the long context, default 1024)
# scale it down for a trial on lavapipe.
set -uo pipefail
dir=${1:?the folder holding strait and the packs}
out=${OUT:-$dir}
tokens=${TOKENS:-128}
long=${LONG:-1024}
strait="$dir/strait"
models=(smollm2 llama-1b)
for m in "${models[@]}"; do
  python3 lm/reference/same_shapes.py unpack "$dir/$m.pack" "/tmp/$m.gguf" || exit 1
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
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
  "$strait" bench gpu --model "$f" --tokens 32 --profile
  "$strait" bench gpu --model "$f" --tokens 32 --profile --fold-output
  "$strait" bench gpu --model "$f" --tokens 32 --batch 8
  # Prefill and decode beside burn and the CPU pass (every core).
  "$strait" bench decode --model "$f" --engines strait-cpu,strait-wgpu,burn-wgpu --tokens "$tokens"
done 2>&1 | tee "$out/gpu-figures.jsonl"
