#!/usr/bin/env bash
# Measures the console's first-load bytes as a browser receives them: builds
# the console and the release server, starts it, and downloads index.html and
# every asset it loads with `Accept-Encoding: br`. Prints one line per file
# and the total. Usage: bench/console-size.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [ "${1:-}" != "--no-build" ]; then
  trunk build --release --offline >/dev/null
  cargo build --release -q -p jobdeck-server
fi

data="$(mktemp -d)"
out="$(mktemp)"
target/release/jobdeck serve --listen 127.0.0.1:0 --data-dir "$data" --console-dir dist >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$data" "$out"' EXIT
for _ in $(seq 100); do grep -q "listening on" "$out" && break; sleep 0.1; done
base="$(sed -n 's/^Jobdeck is listening on \(http[^ ]*\)\/$/\1/p' "$out" | head -1)"

size() { curl -s -H 'Accept-Encoding: br' -o /dev/null -w '%{size_download}' "$base$1"; }
# The precompression runs in the background at start-up; wait for it.
for _ in $(seq 300); do grep -q "console assets precompressed" "$out" && break; sleep 0.1; done

total=0
printf '%-50s %10s %10s\n' file raw brotli
for path in /index.html $(cd dist && ls *.js *.wasm *.css | sed 's|^|/|'); do
  raw="$(curl -s -o /dev/null -w '%{size_download}' "$base$path")"
  br="$(size "$path")"
  total=$((total + br))
  printf '%-50s %10s %10s\n' "$path" "$raw" "$br"
done
printf '%-50s %10s %10s\n' "first load (brotli)" "" "$total"
