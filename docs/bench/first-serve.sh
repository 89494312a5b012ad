#!/usr/bin/env bash
# The first `cargo xtask serve` as a new user meets it: a fresh clone of this repository and
# an empty cargo home (no registry, no wasm-bindgen), rustup's toolchain only. Prints every
# line of output with the seconds since the start and stops the server once `GET /` is
# answered. Usage: bash docs/bench/first-serve.sh [PORT]   (figures: docs/bench/ci.md)
set -u
port=${1:-8123}
repo=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
work=$(mktemp -d)
git clone -q "$repo" "$work/strait"
export CARGO_HOME="$work/cargo-home" CARGO_INCREMENTAL=0
mkdir -p "$CARGO_HOME/bin"
# rustup's proxies, without anything else from the usual cargo home's bin folder.
for b in cargo rustc rustup rustdoc rustfmt; do
  ln -s "$(command -v $b)" "$CARGO_HOME/bin/$b"
done
export PATH="$CARGO_HOME/bin:$(echo "$PATH" | tr ':' '\n' | grep -v '\.cargo/bin' | paste -sd:)"
cd "$work/strait"
t0=$(date +%s.%N)
cargo xtask serve --port "$port" 2>&1 | while IFS= read -r line; do
  printf '%7.1f %s\n' "$(echo "$(date +%s.%N) - $t0" | bc)" "$line"
  case "$line" in
    *"Strait is at"*)
      curl -s -o /dev/null -w "GET / %{http_code}\n" "http://127.0.0.1:$port/"
      pkill -f "xtask serve --port $port" ;;
  esac
done
echo "work folder (remove when done): $work"
