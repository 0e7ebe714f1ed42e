#!/usr/bin/env bash
# What a change of dependencies costs a clean `cargo build -p jobdeck-server`
# (debug): builds two revisions, each from `git archive` into a fresh
# directory with a fresh target directory (the registry cache is shared, so
# nothing is downloaded), and prints wall and CPU time, the target
# directory's and the binary's size, and the compile units the second
# revision adds, slowest first (from `cargo build --timings`).
#
#   bench/server-build-cost.sh [BASE_REV] [REV]
#
# Defaults compare the tree before the kubernetes executor (380000b) with
# HEAD. Run it on a quiet machine: wall times grow with other load, CPU
# times much less.
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev="${1:-380000b}"
rev="${2:-HEAD}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() {
  local name="$1" commit="$2"
  mkdir -p "$work/$name-src"
  git archive "$commit" | tar -x -C "$work/$name-src"
  ( cd "$work/$name-src" &&
    /usr/bin/time -f "%e %U %S" -o "$work/$name.time" \
      env CARGO_TARGET_DIR="$work/$name-target" cargo build -p jobdeck-server --offline --timings >/dev/null 2>&1 )
  read -r wall user sys < "$work/$name.time"
  printf '%-6s %-10s wall %6.0f s  cpu %6.0f s  target %s  binary %s\n' "$name" "$commit" "$wall" \
    "$(awk "BEGIN { print $user + $sys }")" "$(du -sh "$work/$name-target" | cut -f1)" \
    "$(du -h "$work/$name-target/debug/jobdeck" | cut -f1)"
}

build base "$base_rev"
build new "$rev"

python3 - "$work" <<'PY'
import glob, json, re, sys
work = sys.argv[1]
def units(name):
    html = open(sorted(glob.glob(f"{work}/{name}-target/cargo-timings/cargo-timing-*.html"))[-1]).read()
    return json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);\n", html, re.S).group(1))
key = lambda u: (u["name"], u["version"], u.get("target", ""), u.get("mode", ""))
base = {key(u) for u in units("base")}
new = [u for u in units("new") if key(u) not in base]
print(f"{len(new)} compile units added, {sum(u['duration'] for u in new):.0f} s of unit time; slowest:")
for u in sorted(new, key=lambda u: -u["duration"])[:10]:
    print(f"  {u['duration']:6.1f} s  {u['name']} {u['version']}{u.get('target', '')}")
for name in ("base", "new"):
    for u in units(name):
        if u["name"] == "jobdeck-server":
            print(f"{name}: jobdeck-server{u.get('target', '') or ' lib'} {u['duration']:.1f} s")
PY
