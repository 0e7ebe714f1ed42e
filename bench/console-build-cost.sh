#!/usr/bin/env bash
# What building the console's WebAssembly costs: a clean
# `cargo build --profile console --target wasm32-unknown-unknown -p
# jobdeck-console` (the build trunk runs, LTO and one codegen unit), then a
# one-line change (a new `pub fn` at the end of FILE) built again, for two
# revisions. Each is built from `git archive` into a fresh directory with a
# fresh target directory (the registry cache is shared, so nothing is
# downloaded). Prints wall and CPU time of each build.
#
#   bench/console-build-cost.sh BASE_REV REV [FILE_AT_BASE [FILE_AT_REV]]
#
# FILE defaults to src/pages/job/actions.rs (the job page's actions; before
# stop 42 they were src/components/job_actions.rs). A FILE that does not
# exist at its revision stops the script. Run it on a quiet machine: wall
# times grow with other load.
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev="$1"
rev="$2"
base_file="${3:-src/pages/job/actions.rs}"
rev_file="${4:-$base_file}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

timed() {
  local name="$1" what="$2"
  /usr/bin/time -f "%e %U %S" -o "$work/$name.time" \
    env CARGO_TARGET_DIR="$work/$name-target" \
    cargo build --profile console --target wasm32-unknown-unknown -p jobdeck-console --offline >/dev/null 2>&1
  read -r wall user sys < "$work/$name.time"
  printf '%-6s %-10s %-12s wall %6.1f s  cpu %6.1f s\n' "$name" "$3" "$what" "$wall" \
    "$(awk "BEGIN { print $user + $sys }")"
}

build() {
  local name="$1" commit="$2" file="$3"
  mkdir -p "$work/$name-src"
  git archive "$commit" | tar -x -C "$work/$name-src"
  cd "$work/$name-src"
  timed "$name" clean "$commit"
  [ -f "$file" ] || { echo "no $file at $commit" >&2; exit 1; }
  printf '\n/// A one-line change for the benchmark.\npub fn bench_edit() {}\n' >> "$file"
  timed "$name" "one line" "$commit"
  cd - >/dev/null
}

build base "$base_rev" "$base_file"
build new "$rev" "$rev_file"
