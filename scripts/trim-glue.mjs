#!/usr/bin/env node
// A build step of the split console (scripts/split-console.sh), run on the
// core module and its JavaScript glue as wasm-bindgen wrote them, before
// wasm-opt and terser:
//
//   node scripts/trim-glue.mjs CORE_WASM GLUE_JS LOADER_JS
//
// 1. Short names between the core and its glue. wasm-bindgen names every
//    import after the Rust function and a 16-digit hash
//    (`__wbg_setattribute_2ba1c8a2ee2c8a07`), and the core's exports after
//    the closure shims' symbols; each name is in the core and in the glue,
//    the hashes do not compress, and there are about 230 of them: about
//    5 KB of every page's download (docs/measurements.md). Imports from the
//    glue become `w`.`a`, `w`.`b`, …; exports the glue calls become `a`,
//    `b`, …, except those the split loader LOADER_JS reads by name.
// 2. No stream adapters nobody calls. Leptos links `server_fn`, which
//    links `wasm-streams`, whose `#[wasm_bindgen]` classes
//    (`IntoUnderlyingSource`, `IntoUnderlyingSink`,
//    `IntoUnderlyingByteSource`) are exports of the core: an export is
//    never dead code to wasm-opt, so their code came with every page. The
//    console makes no server functions; the exports and the classes go, and
//    wasm-opt drops what only they reached.
//
// Both files are rewritten in place. Every edit checks it found what it
// expects (wasm-bindgen's version is pinned in Trunk.toml), so a new glue
// shape fails the build instead of shipping a broken console.
import { readFileSync, writeFileSync } from "node:fs";

const [wasmPath, gluePath, loaderPath] = process.argv.slice(2);
if (!loaderPath) {
  console.error("usage: trim-glue.mjs CORE_WASM GLUE_JS LOADER_JS");
  process.exit(2);
}

function fail(message) {
  console.error(`trim-glue: ${message}`);
  process.exit(1);
}

// The stream adapters' classes, and the exports only they call.
const STREAM_CLASSES = ["IntoUnderlyingByteSource", "IntoUnderlyingSink", "IntoUnderlyingSource"];
const isStreamExport = (name) => /^(__wbg_)?intounderlying(bytesource|sink|source)_/.test(name);

let glue = readFileSync(gluePath, "utf8");
const loader = readFileSync(loaderPath, "utf8");

/** `text` with exactly `count` matches of `pattern` (global) replaced. */
function replaceCounted(text, pattern, to, count, what) {
  const found = text.match(pattern)?.length ?? 0;
  if (found !== count) fail(`expected ${count} of ${what} in the glue, found ${found}`);
  return text.replace(pattern, to);
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// Short names: one or two letters, never a name the glue already gives a
// property (the renamed ones are all gone, so only fresh names are checked).
const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
function* shortNames() {
  for (const a of letters) yield a;
  for (const a of letters) for (const b of letters) yield a + b;
}

// --- The WebAssembly binary: sections, LEB128 numbers and names. ---
const wasm = readFileSync(wasmPath);
if (wasm.readUInt32BE(0) !== 0x0061736d) fail(`${wasmPath} is not a WebAssembly module`);

function readU32(buf, pos) {
  let result = 0;
  let shift = 0;
  for (;;) {
    const byte = buf[pos++];
    result |= (byte & 0x7f) << shift;
    if (byte < 0x80) return [result >>> 0, pos];
    shift += 7;
  }
}
function u32(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return Buffer.from(out);
}
function readName(buf, pos) {
  const [length, start] = readU32(buf, pos);
  return [buf.toString("utf8", start, start + length), start + length];
}
function name(text) {
  const bytes = Buffer.from(text, "utf8");
  return Buffer.concat([u32(bytes.length), bytes]);
}
/** The end of an import's description (after module and field names). */
function skipImportDesc(buf, pos) {
  const kind = buf[pos++];
  const limits = (p) => {
    const flags = buf[p++];
    [, p] = readU32(buf, p);
    if (flags & 1) [, p] = readU32(buf, p);
    return p;
  };
  if (kind === 0) return readU32(buf, pos)[1];
  if (kind === 1) return limits(pos + 1);
  if (kind === 2) return limits(pos);
  if (kind === 3) return pos + 2;
  fail(`unknown import kind ${kind}`);
}

const sections = [];
for (let pos = 8; pos < wasm.length; ) {
  const id = wasm[pos];
  const [size, start] = readU32(wasm, pos + 1);
  sections.push({ id, body: wasm.subarray(start, start + size) });
  pos = start + size;
}
const only = (id, what) => {
  const found = sections.filter((s) => s.id === id);
  if (found.length !== 1) fail(`the core has ${found.length} ${what} sections`);
  return found[0];
};

// Imports from the glue: the module name ends in `_bg.js`.
const importSection = only(2, "import");
const names = shortNames();
let glueModule;
{
  const body = importSection.body;
  let [count, pos] = readU32(body, 0);
  const parts = [u32(count)];
  for (let i = 0; i < count; i++) {
    let module, field;
    [module, pos] = readName(body, pos);
    [field, pos] = readName(body, pos);
    const end = skipImportDesc(body, pos);
    if (module.endsWith("_bg.js")) {
      if (glueModule !== undefined && glueModule !== module) fail(`two glue modules: ${glueModule}, ${module}`);
      glueModule = module;
      const short = names.next().value;
      glue = replaceCounted(glue, new RegExp(`\\b${escape(field)}(?=: function)`, "g"), short, 1, `import ${field}`);
      parts.push(name("w"), name(short));
    } else {
      parts.push(name(module), name(field));
    }
    parts.push(body.subarray(pos, end));
    pos = end;
  }
  if (glueModule === undefined) fail("the core imports nothing from the glue");
  importSection.body = Buffer.concat(parts);
  glue = replaceCounted(glue, new RegExp(`"${escape(glueModule)}":`, "g"), '"w":', 1, `the module ${glueModule}`);
}

// Exports: the stream adapters' go; those the glue calls (`wasm.NAME`) and
// the loader does not name get short names.
const exportSection = only(7, "export");
{
  const body = exportSection.body;
  let [count, pos] = readU32(body, 0);
  const kept = [];
  let dropped = 0;
  for (let i = 0; i < count; i++) {
    let field;
    [field, pos] = readName(body, pos);
    const kind = body[pos];
    const [, end] = readU32(body, pos + 1);
    const desc = body.subarray(pos, end);
    pos = end;
    if (isStreamExport(field)) {
      dropped++;
      continue;
    }
    const called = new RegExp(`\\bwasm\\.${escape(field)}\\b`, "g");
    if (kind === 0 && !new RegExp(`\\b${escape(field)}\\b`).test(loader) && called.test(glue)) {
      let short = names.next().value;
      glue = glue.replace(called, `wasm.${short}`);
      kept.push(Buffer.concat([name(short), desc]));
    } else {
      kept.push(Buffer.concat([name(field), desc]));
    }
  }
  if (dropped !== 13) fail(`expected the 13 exports of wasm-streams' classes, found ${dropped}`);
  exportSection.body = Buffer.concat([u32(kept.length), ...kept]);
}

// The classes in the glue: no longer exported, nothing left refers to them,
// and terser drops what is unused.
for (const cls of STREAM_CLASSES) {
  glue = replaceCounted(glue, new RegExp(`^export class ${cls} \\{`, "gm"), `class ${cls} {`, 1, `class ${cls}`);
  glue = replaceCounted(
    glue,
    new RegExp(`^if \\(Symbol\\.dispose\\) ${cls}\\.prototype\\[Symbol\\.dispose\\] = ${cls}\\.prototype\\.free;\\n`, "gm"),
    "",
    1,
    `${cls}'s dispose`,
  );
  glue = replaceCounted(
    glue,
    new RegExp(`^const ${cls}Finalization = [^;]*;\\n`, "gm"),
    "",
    1,
    `${cls}'s finalization registry`,
  );
}
if (/wasm\.(__wbg_)?intounderlying/.test(glue.replace(/^class IntoUnderlying[^]*?^}\n/gm, ""))) {
  fail("the glue calls a stream adapter outside its classes");
}

const out = [wasm.subarray(0, 8)];
for (const { id, body } of sections) out.push(Buffer.from([id]), u32(body.length), body);
writeFileSync(wasmPath, Buffer.concat(out));
writeFileSync(gluePath, glue);
