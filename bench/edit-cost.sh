#!/usr/bin/env bash
# What a one-line edit costs the edit-build loop: for each file given, adds
# a `pub fn` at its end, times `cargo build -p jobdeck-server` (the binary)
# and then `cargo test -p jobdeck-server --no-run` (the server's test
# binaries), and takes the line out again. Each is timed three times, with a new
# line each time, after one warm-up build, in the target directory the
# caller uses (CARGO_TARGET_DIR), debug profile.
#
#   bench/edit-cost.sh crates/server/src/http/jobs.rs crates/core/src/scheduler/mod.rs
#
# Run it on a quiet machine with a clean work tree: the files are restored
# from a copy, never from git, so an uncommitted edit survives.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || { echo "usage: $0 FILE..." >&2; exit 2; }
work="$(mktemp -d)"
trap 'for f in "$work"/*.orig; do [ -e "$f" ] && cp "$f" "$(cat "${f%.orig}.path")"; done; rm -rf "$work"' EXIT

cargo build -p jobdeck-server --offline -q
cargo test -p jobdeck-server --offline --no-run -q 2>/dev/null

seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s.%N)
  awk "BEGIN { printf \"%.1f\", $end - $start }"
}

n=0
for file in "$@"; do
  key="$work/$n"
  cp "$file" "$key.orig"
  echo "$file" > "$key.path"
  binary=() tests=()
  for round in 1 2 3; do
    printf '\npub fn edit_cost_probe_%s_%s() {}\n' "$n" "$round" >> "$file"
    binary+=("$(seconds cargo build -p jobdeck-server --offline)")
    tests+=("$(seconds cargo test -p jobdeck-server --offline --no-run)")
  done
  cp "$key.orig" "$file"
  rm "$key.orig"
  printf '%-55s binary %s, %s, %s s   tests %s, %s, %s s\n' "$file" "${binary[@]}" "${tests[@]}"
  n=$((n + 1))
done
# Build what the files are again, so the target directory matches the tree.
cargo build -p jobdeck-server --offline -q
