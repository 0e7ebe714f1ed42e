#!/usr/bin/env bash
# Trunk's post-build hook (Trunk.toml): cuts the console's WebAssembly into
# a core and one module per page, so a browser downloads only the core and
# the page it opens first, and every other page the first time it is shown.
#
# The split points are the `split_view!` page functions in src/lib.rs, the
# job page's tabs and the form's parts (docs/architecture.md). Trunk has
# already built everything; this re-does its last steps on the same cargo
# output (which keeps the linker's relocations, see .cargo/config.toml):
#   wasm-split-cli   core module + per-page modules + the loader `__wasm_split.js`
#   wasm-bindgen     the JavaScript glue for the core, under trunk's file names,
#                    keeping the function table the page modules link against
#   trim-glue.mjs    short names between the core and its glue, and no
#                    unused stream adapters (scripts/trim-glue.mjs says why)
#   wasm-opt -Oz     every module, without the producers and target-features
#                    sections (about 200 bytes a module that nothing reads)
#   pack-console.mjs packs of the modules each page needs, which compress
#                    together (scripts/pack-console.mjs says how the loader
#                    picks them), and the modules named after their number
#                    and a hash of them all
#   terser           the loader and the glue, minified (names the wasm imports
#                    by are properties, which terser leaves alone)
# then names the loader after its content, as trunk does, so the server can
# cache every file forever, and writes each hashed file's brotli next to it
# (`FILE.br`), which the server sends as it is, and each pack's brotli
# against the core module as a dictionary (`FILE.dcb`, crates/precompress).
set -euo pipefail

staging="${TRUNK_STAGING_DIR:?run by trunk as a post_build hook}"
root="${TRUNK_SOURCE_DIR:-$(dirname "$0")/..}"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
input="$target_dir/wasm32-unknown-unknown/console/jobdeck-console.wasm"
glue="$(cd "$staging" && ls jobdeck-console-*.js)"
stem="${glue%.js}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

features=(--enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue)
hash16() { sha256sum "$1" | cut -c1-16; }
# wasm-opt warns about every module's name subsection it does not know (the
# split step's); those warnings say nothing, anything else is shown. With
# JOBDECK_CONSOLE_NAMED_DIR set (bench/console-size.sh --report), each module
# is also written there as `$3.wasm`, optimized the same way but keeping its
# function names, for the size report.
optimize() {
  local out
  out="$(wasm-opt -Oz "${features[@]}" --strip-producers --strip-target-features "$1" -o "$2" 2>&1)" || { echo "$out" >&2; return 1; }
  grep -v "unknown name subsection" <<<"$out" >&2 || true
  if [ -n "${JOBDECK_CONSOLE_NAMED_DIR:-}" ]; then
    mkdir -p "$JOBDECK_CONSOLE_NAMED_DIR"
    wasm-opt -Oz -g "${features[@]}" "$1" -o "$JOBDECK_CONSOLE_NAMED_DIR/$3.wasm" 2>/dev/null
  fi
}

# A data segment the split cannot lay out goes whole into the core with only
# a warning: every page's strings in every first load (15-19 KB, which the
# size budget did not catch while pages stayed under it; docs/measurements.md,
# "Watch the core's data"). That fails the build here instead.
split_log="$(RUST_LOG=warn wasm-split-cli "$input" "$work/split" --out-name "$stem" 2>&1)" || { echo "$split_log" >&2; exit 1; }
if grep -qiE "putting it in(to)? main" <<<"$split_log"; then
  echo "$split_log" >&2
  echo "split-console: wasm-split-cli put a data segment whole into the core module (see above)" >&2
  exit 1
fi
wasm-bindgen --target web --no-typescript --keep-lld-exports --out-dir "$work/glue" --out-name "$stem" "$work/split/$stem.wasm"
node "$root/scripts/trim-glue.mjs" "$work/glue/${stem}_bg.wasm" "$work/glue/$stem.js" "$work/split/__wasm_split.js"
[ -n "${JOBDECK_CONSOLE_NAMED_DIR:-}" ] && rm -rf "$JOBDECK_CONSOLE_NAMED_DIR"
optimize "$work/glue/${stem}_bg.wasm" "$staging/${stem}_bg.wasm" "${stem%-*}_bg"

loader="$work/split/__wasm_split.js"
for module in "$work/split"/*.wasm; do
  name="$(basename "$module" .wasm)"
  [ "$name" = "$stem" ] && continue
  optimize "$module" "$staging/$name.wasm" "$name"
done
# Renames the modules after their number and the build, and writes the packs.
node "$root/scripts/pack-console.mjs" pack "$loader" "$staging"
minify() { terser "$1" --module --compress --mangle -o "$1.min" && mv "$1.min" "$1"; }
minify "$loader"
hashed_loader="__wasm_split-$(hash16 "$loader").js"
cp "$loader" "$staging/$hashed_loader"
# Only the module imports change; the import object's keys must keep the
# name the core module was linked against.
sed "/^import /s|\"./__wasm_split.js\"|\"./$hashed_loader\"|" "$work/glue/$stem.js" > "$staging/$stem.js"
grep -q "$hashed_loader" "$staging/$stem.js" || { echo "split-console: the glue does not import the loader" >&2; exit 1; }
minify "$staging/$stem.js"

# Trunk wrote subresource-integrity digests of the files replaced above into
# index.html; give them the digests of what is there now.
sri() { printf 'sha384-%s' "$(openssl dgst -sha384 -binary "$1" | base64 -w0)"; }
html="$staging/index.html"
for file in "$stem.js" "${stem}_bg.wasm"; do
  digest="$(sri "$staging/$file")"
  # Trunk's minified index.html may leave attribute values unquoted.
  sed -i -E "s#(href=\"?/$file\"?[^>]*integrity=)(\"[^\"]*\"|[^ >\"]*)#\1\"$digest\"#" "$html"
  grep -q "$digest" "$html" || { echo "split-console: no integrity for $file in index.html" >&2; exit 1; }
done

node "$root/scripts/pack-console.mjs" compress "$staging"
# Each pack compressed against the core as a dictionary (`FILE.dcb`), which
# the server sends to a browser that holds the core (crates/precompress).
(cd "$root" && cargo run --release -q -p jobdeck-precompress -- "$staging/${stem}_bg.wasm" "$staging"/pack*.bin)
