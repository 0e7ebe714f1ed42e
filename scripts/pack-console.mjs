#!/usr/bin/env node
// Two build steps of the split console (scripts/split-console.sh), in Node,
// which the build already has (wasm-opt comes from npm):
//
//   node scripts/pack-console.mjs pack LOADER DIR
//     Writes module packs into DIR and teaches the split loader LOADER (the
//     `__wasm_split.js` wasm-split-cli wrote, its modules in DIR) to use
//     them. A page needs its own module and many `chunk_*`
//     modules of code it shares with some other pages; fetched one by one,
//     each is compressed on its own, and together they came to a quarter to
//     a half more than the same bytes compressed as one
//     (docs/measurements.md). A pack is those modules in one file, so they
//     compress together: one per split point with every module it needs, one
//     per ordered pair of split points with what the second needs that the
//     first did not (the first move after a page), and one per pair with
//     what either needs (a page and its tab asked for at once). The loader
//     fetches the largest of these packs made only of modules it has not
//     fetched yet, and any module no pack covers on its own, as before. The
//     modules are renamed after their number and the build.
//
//   node scripts/pack-console.mjs compress DIR
//     Writes `FILE.br` next to every hashed file of DIR, at brotli's best
//     quality, so the server sends them without compressing at start-up
//     (crates/server/src/http/console.rs reads them).
//
// Pack format: the bytes "JDPK", the number of modules (u32, little endian),
// then each module as its length (u32, little endian) and its bytes, in the
// order of their numbers.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { brotliCompress, constants } from "node:zlib";

const [command, ...args] = process.argv.slice(2);
if (command === "pack" && args.length === 2) {
  pack(args[0], args[1]);
} else if (command === "compress" && args.length === 1) {
  await compress(args[0]);
} else {
  console.error("usage: pack-console.mjs pack LOADER DIR | compress DIR");
  process.exit(2);
}

function fail(message) {
  console.error(`pack-console: ${message}`);
  process.exit(1);
}

/** Replaces `from` in `text` exactly once; the loader's shape is pinned with wasm-split-cli's version. */
function replaceOnce(text, from, to) {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) fail(`the loader does not contain exactly one ${JSON.stringify(from)}`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

function pack(loaderPath, dir) {
  let loader = readFileSync(loaderPath, "utf8");

  // Every module the loader fetches, by the variable that loads it.
  const modules = [];
  // wasm-split-cli 0.2.4 observes the fetch's rejection (`src.catch`), so an
  // early failure is not an unhandled rejection; the line is kept.
  const fetchPattern =
    /fetch\(new URL\("\.\/([^"]+\.wasm)", import\.meta\.url\)\);\n(\s*src\.catch\(\(\) => \{\}\);\n)?(\s*)return async \(imports\) => \(WebAssembly\.instantiateStreaming\(src, imports\)\);/g;
  loader = loader.replace(fetchPattern, (_, file, observed, indent) => {
    const index = modules.push(file) - 1;
    return `__fetchModule(${index});\n${observed ?? ""}${indent}return async (imports) => __instantiate(${index}, src, imports);`;
  });
  if (modules.length === 0) fail("the loader fetches no module");
  // Every chunk's loader is one definition per module, the same but for
  // its number: they become one function (`__chunk` below) that makes a
  // chunk's loader the first time a split point needs it. (234 definitions,
  // and each split point's list of the ones it needs, were about 1.6 KB of
  // every page's download; the list is `__needs` already.)
  const chunkIndex = new Map();
  const chunkPattern =
    /const (__chunk_\d+) = makeLoad\(\(\) => \{\s*const src = __fetchModule\((\d+)\);\s*(src\.catch\(\(\) => \{\}\);\s*)?return async \(imports\) => __instantiate\(\2, src, imports\);\s*\}\s*, \[\]\);\n?/g;
  loader = loader.replace(chunkPattern, (_, name, index) => {
    chunkIndex.set(name, Number(index));
    return "";
  });

  // What each split point needs: its own module and its chunks' modules.
  // Split points are numbered in the loader's order.
  const splitPattern =
    /(export const __wasm_split_load_\w+ = wrapAsyncCb\(makeLoad\(\(\) => \{\s*const src = __fetchModule\((\d+)\);[^]*?\n, \[)([^\]]*)(\]\)\);)/g;
  const needs = [];
  const names = [];
  loader = loader.replace(splitPattern, (_, head, own, deps) => {
    // Every split point is declared with `wasm_split` itself, under its
    // function's name (`split_view!`, the form's parts).
    const name = head.match(/__wasm_split_load_(\w+) =/);
    if (!name) fail(`a split point without a name: ${head.slice(0, 80)}`);
    names.push(name[1]);
    const set = [Number(own)];
    for (const dep of deps.split(",").map((d) => d.trim()).filter(Boolean)) {
      if (!chunkIndex.has(dep)) fail(`unknown chunk ${dep}`);
      set.push(chunkIndex.get(dep));
    }
    set.sort((a, b) => a - b);
    const split = needs.push(set) - 1;
    return `${head.slice(0, -1)}__needs[${split}].filter((i) => i !== ${own}).map(__chunk), ${split}));`;
  });
  if (needs.length === 0) fail("the loader has no split point");
  if (/__chunk_\d/.test(loader)) fail("a chunk's loader is still named: wasm-split-cli wrote a shape this script does not know");

  // Pack names follow from the split points, so the loader needs no table of
  // them: `pack{X}` holds all of split point X's modules, `pack{X}from{A}`
  // those X needs and A does not, `pack{A}and{B}` (A < B) those either needs
  // (a page and its tab asked for at once), `pack{X}from{A}and{B}` (A < B, a
  // pair of `together` below) those X needs and neither A nor B does
  // (another tab after that), `pack{A}and{B}from{X}` what such a pair needs
  // that X does not (the job page opened from the list). All end in one hash of every
  // module's bytes, so a new build never reuses a name. The loader's choice
  // below (`__choosePacks`) asks for exactly these.
  // Modules are renamed `m{index}-{build}.wasm` too, so the loader needs no
  // table of their names either (133 hashed names were 1.6 KB of every
  // page's download).
  const bytes = modules.map((file) => readFileSync(join(dir, file)));
  const digest = createHash("sha256");
  bytes.forEach((module) => digest.update(module));
  const build = digest.digest("hex").slice(0, 16);
  modules.forEach((file, i) => {
    writeFileSync(join(dir, `m${i}-${build}.wasm`), bytes[i]);
    unlinkSync(join(dir, file));
  });
  // The pairs of split points asked for at once: the job page and one of
  // its tabs (a split point named `*_tab`, pages/job/mod.rs), whose modules
  // a cold link to a job fetches together. After such a pair only, another
  // split point's pack is made of what neither of the two had; made for
  // every pair, these packs would be three times all the others.
  const together = [];
  names.forEach((a, i) => names.forEach((b, j) => {
    if (i < j && ((a === "job_page" && b.endsWith("_tab")) || (b === "job_page" && a.endsWith("_tab")))) together.push([i, j]);
  }));
  if (together.length === 0) fail("no split point named job_page with tabs named *_tab");
  const packs = [];
  needs.forEach((target, x) => {
    if (target.length > 1) packs.push([`pack${x}`, target]);
    needs.forEach((from, a) => {
      const added = target.filter((i) => !from.includes(i));
      if (a !== x && added.length > 1 && added.length < target.length) packs.push([`pack${x}from${a}`, added]);
      if (x < a) packs.push([`pack${x}and${a}`, [...new Set([...target, ...from])].sort((i, j) => i - j)]);
    });
    for (const [a, b] of together) {
      if (a === x || b === x) continue;
      // After a page and its tab came at once, what another split point adds.
      const beyond = target.filter((i) => !needs[a].includes(i) && !needs[b].includes(i));
      if (beyond.length > 1 && beyond.length < target.length) packs.push([`pack${x}from${a}and${b}`, beyond]);
      // A page and its tab asked for at once after split point X (the job
      // page opened from the list): what they add to it.
      const both = [...new Set([...needs[a], ...needs[b]])].filter((i) => !target.includes(i)).sort((i, j) => i - j);
      if (both.length > 1) packs.push([`pack${a}and${b}from${x}`, both]);
    }
  });
  for (const [stem, indices] of packs) {
    const parts = indices.map((i) => bytes[i]);
    const header = Buffer.alloc(8);
    header.write("JDPK", 0, "latin1");
    header.writeUInt32LE(parts.length, 4);
    const body = [header];
    for (const part of parts) {
      const length = Buffer.alloc(4);
      length.writeUInt32LE(part.length, 0);
      body.push(length, part);
    }
    writeFileSync(join(dir, `${stem}-${build}.bin`), Buffer.concat(body));
  }

  loader = replaceOnce(
    loader,
    "function makeLoad(fetcher, deps) {\n    const loader = async () => {\n",
    "function makeLoad(fetcher, deps, split) {\n    const loader = async () => {\n        if (split !== undefined) await __askPack(split);\n",
  );
  if (loader.includes("instantiateStreaming(src")) fail("a module is still instantiated the old way");
  const runtime = `
// Module packs (scripts/pack-console.mjs): several modules in one download.
// The modules each split point needs, and the packs' common name ending.
// Each list is sorted and written as the gaps between its numbers, which
// are small and repeat: 0.5 KB less of every page's download than the
// numbers themselves (docs/measurements.md, "The form's templates").
const __needs = ${JSON.stringify(needs.map((list) => list.map((n, i) => n - (i === 0 ? 0 : list[i - 1]))))}
    .map((gaps) => { let at = 0; return gaps.map((gap) => (at += gap)); });
// The pairs asked for at once that have packs of what comes after them.
const __together = ${JSON.stringify(together)};
const __build = "${build}";
// A chunk's loader, made once, the first time a split point needs it.
const __chunks = [];
function __chunk(index) {
    return __chunks[index] ??= makeLoad(() => {
        const src = __fetchModule(index);
        src.catch(() => {});
        return async (imports) => __instantiate(index, src, imports);
    }, []);
}
// Each module's download, once: a Response, or its bytes out of a pack. A
// failed one is forgotten, so a later load tries again.
const __requested = new Map();
function __remember(index, download) {
    __requested.set(index, download);
    download.catch(() => { if (__requested.get(index) === download) __requested.delete(index); });
    return download;
}
function __fetchModule(index) {
    return __requested.get(index) ?? __remember(index, __fetchAlone(index));
}
// An answer that is not the module (a proxy's 503, a 404 after a deploy) is
// a failed download like a lost connection: forgotten, so "Try again" asks
// again rather than reading the same spent answer.
function __fetchAlone(index) {
    const file = "m" + index + "-" + __build + ".wasm";
    return fetch(new URL("./" + file, import.meta.url)).then(response => {
        if (!response.ok) throw new Error(file + ": HTTP " + response.status);
        return response;
    });
}
// The split points asked for in this task. Their packs are chosen a
// microtask later, together: a page and its tab asked for at once (a link to
// a job's logs) come in one pack.
let __asked = [];
let __chosen;
function __askPack(split) {
    if (__asked.length === 0) {
        __chosen = new Promise(resolve => queueMicrotask(() => {
            __choosePacks(__asked);
            __asked = [];
            resolve();
        }));
    }
    __asked.push(split);
    return __chosen;
}
function __choosePacks(splits) {
    if (splits.length === 2) {
        const [a, b] = splits[0] < splits[1] ? splits : [splits[1], splits[0]];
        const both = [...new Set([...__needs[a], ...__needs[b]])].sort((i, j) => i - j);
        if (both.every(i => !__requested.has(i))) return __fetchPackFile("pack" + a + "and" + b, both);
        // What they add to a split point fetched before, if a pack has it.
        let pack, name;
        if (__together.some(([i, j]) => i === a && j === b)) {
            __needs.forEach((before, from) => {
                const added = both.filter(i => !before.includes(i));
                if (from !== a && from !== b && added.length > 1 && added.every(i => !__requested.has(i))
                    && (pack === undefined || added.length > pack.length)) {
                    pack = added;
                    name = "pack" + a + "and" + b + "from" + from;
                }
            });
        }
        if (pack !== undefined) __fetchPackFile(name, pack);
    }
    splits.forEach(__fetchPack);
}
// Fetches the largest pack of split point \`split\`'s modules that holds
// none fetched already: all of them, or what it adds to another split point
// or to a page and its tab.
function __fetchPack(split) {
    const needs = __needs[split];
    const fresh = i => !__requested.has(i);
    let pack, name;
    if (needs.length > 1 && needs.every(fresh)) {
        pack = needs;
        name = "pack" + split;
    } else {
        const consider = (added, packName) => {
            if (added.length > 1 && added.length < needs.length && added.every(fresh)
                && (pack === undefined || added.length > pack.length)) {
                pack = added;
                name = packName;
            }
        };
        __needs.forEach((other, from) => {
            if (from !== split) consider(needs.filter(i => !other.includes(i)), "pack" + split + "from" + from);
        });
        for (const [a, b] of __together) {
            if (a !== split && b !== split) {
                consider(needs.filter(i => !__needs[a].includes(i) && !__needs[b].includes(i)), "pack" + split + "from" + a + "and" + b);
            }
        }
    }
    if (pack !== undefined) __fetchPackFile(name, pack);
}
function __fetchPackFile(name, pack) {
    const file = name + "-" + __build + ".bin";
    const modules = fetch(new URL("./" + file, import.meta.url)).then(async response => {
        if (!response.ok) throw new Error(file + ": HTTP " + response.status);
        return __unpack(new Uint8Array(await response.arrayBuffer()), file);
    });
    // A pack that does not come (a proxy that refuses it, a broken file) is
    // no worse than no pack: its modules are then fetched one by one.
    pack.forEach((index, i) => __remember(index, modules.then(list => list[i], () => __fetchAlone(index))));
}
function __unpack(bytes, name) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (bytes.length < 8 || view.getUint32(0) !== 0x4a44504b) throw new Error(name + ": not a module pack");
    const list = [];
    let at = 8;
    for (let n = view.getUint32(4, true); n > 0; n--) {
        const length = view.getUint32(at, true);
        list.push(bytes.subarray(at + 4, at + 4 + length));
        at += 4 + length;
    }
    if (at !== bytes.length) throw new Error(name + ": a truncated module pack");
    return list;
}
// Once a module is in, its entry no longer holds its bytes, so a pack's
// buffer is freed when its last module is in.
const __instantiated = Promise.resolve(null);
// A module that downloaded but does not instantiate (a truncated body) is
// forgotten too: its answer is spent, so the next try downloads it again.
async function __instantiate(index, src, imports) {
    try {
        const download = await src;
        const instance = await (download instanceof Response
            ? WebAssembly.instantiateStreaming(download, imports)
            : WebAssembly.instantiate(download, imports));
        __requested.set(index, __instantiated);
        return instance;
    } catch (error) {
        if (__requested.get(index) === src) __requested.delete(index);
        throw error;
    }
}
`;
  const importEnd = loader.indexOf("\n", loader.indexOf("import ")) + 1;
  if (importEnd <= 0) fail("the loader imports nothing");
  loader = loader.slice(0, importEnd) + runtime + loader.slice(importEnd);
  writeFileSync(loaderPath, loader);
  console.error(`pack-console: ${packs.length} packs for ${needs.length} split points over ${modules.length} modules`);
}

/** Trunk's and split-console.sh's content-named files, as the server tells them (console.rs). */
function isHashed(file) {
  const stem = file.split(".")[0].replace(/_bg$/, "");
  const dash = stem.lastIndexOf("-");
  return dash > 0 && /^[0-9a-f]{12,16}$/.test(stem.slice(dash + 1));
}

async function compress(dir) {
  const squeeze = promisify(brotliCompress);
  const files = readdirSync(dir).filter((file) => isHashed(file) && !file.endsWith(".br"));
  await Promise.all(
    files.map(async (file) => {
      const raw = readFileSync(join(dir, file));
      const params = {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_LGWIN]: 22,
        [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
      };
      writeFileSync(join(dir, `${file}.br`), await squeeze(raw, { params }));
    }),
  );
}
