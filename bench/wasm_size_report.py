#!/usr/bin/env python3
"""Where the console's WebAssembly bytes go, per split module and per function.

Reads a directory of split modules that still carry their `name` section
(`bench/console-size.sh --report` makes one: the same split and `wasm-opt
-Oz` as the shipped console, with `-g` so the names stay) and prints, for
each module, its size, the crates and the functions its code bytes belong
to, then the same for the whole console, the functions compiled into more
than one module, and the families of code the issue asks about (serde,
formatting). With the `console_size` benchmark's JSON it adds each module's
size as the browser receives it (brotli), matched by file name. With the
built console (`--dist`) and the benchmark's moves (`--moves`) it also says
which named modules each page and each move downloads: the shipped modules
are renamed `m{i}` and sent in packs (scripts/pack-console.mjs), and are
matched to the named ones by their code section, which `-g` leaves as it is.

    bench/wasm_size_report.py DIR [--brotli target/bench/console_size.json]
        [--dist dist --moves target/bench/console_moves.json] [--top N]

Only the standard library is used, so the report runs wherever the build
does. The parser reads the sections of the WebAssembly binary format it
needs (imports, code, data, the `name` custom section) and skips the rest.
"""

import argparse
import collections
import hashlib
import json
import os
import re
import struct
import sys


def leb_u32(buf, pos):
    """Decodes an unsigned LEB128 number; returns it and the next position."""
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def name_at(buf, pos):
    length, pos = leb_u32(buf, pos)
    return buf[pos:pos + length].decode("utf-8", "replace"), pos + length


class Module:
    """The parts of one module the report needs."""

    def __init__(self, path):
        self.path = path
        self.size = os.path.getsize(path)
        self.imported_functions = 0
        self.bodies = []  # Code bytes of each defined function, in order.
        self.data = 0
        self.names = {}
        self.symbols = {}
        self.custom = 0
        buf = open(path, "rb").read()
        if buf[:4] != b"\0asm":
            raise ValueError(f"{path} is not a WebAssembly module")
        pos = 8
        while pos < len(buf):
            section, pos = buf[pos], pos + 1
            size, pos = leb_u32(buf, pos)
            end = pos + size
            if section == 2:
                self._imports(buf, pos)
            elif section == 10:
                count, p = leb_u32(buf, pos)
                for _ in range(count):
                    body, p = leb_u32(buf, p)
                    self.bodies.append(body + 1)  # The size's own byte, about.
                    p += body
            elif section == 11:
                self.data += size
            elif section == 0:
                name, p = name_at(buf, pos)
                if name == "name":
                    self._names(buf, p, end)
                else:
                    self.custom += size
            pos = end

    def _imports(self, buf, pos):
        count, pos = leb_u32(buf, pos)
        for _ in range(count):
            _, pos = name_at(buf, pos)
            _, pos = name_at(buf, pos)
            kind, pos = buf[pos], pos + 1
            if kind == 0:  # function: a type index
                _, pos = leb_u32(buf, pos)
                self.imported_functions += 1
            elif kind == 1:  # table: reference type and limits
                pos += 1
                flags, pos = buf[pos], pos + 1
                _, pos = leb_u32(buf, pos)
                if flags & 1:
                    _, pos = leb_u32(buf, pos)
            elif kind == 2:  # memory: limits
                flags, pos = buf[pos], pos + 1
                _, pos = leb_u32(buf, pos)
                if flags & 1:
                    _, pos = leb_u32(buf, pos)
            elif kind == 3:  # global: value type and mutability
                pos += 2
            elif kind == 4:  # tag: attribute and type index
                pos += 1
                _, pos = leb_u32(buf, pos)

    def _names(self, buf, pos, end):
        while pos < end:
            kind, pos = buf[pos], pos + 1
            size, pos = leb_u32(buf, pos)
            if kind == 1:
                count, p = leb_u32(buf, pos)
                for _ in range(count):
                    index, p = leb_u32(buf, p)
                    name, p = name_at(buf, p)
                    self.symbols[index] = name
                    self.names[index] = demangle(name)
            pos += size

    def functions(self):
        """(name, code bytes) of every defined function."""
        for name, _, body in self.symbols_and_functions():
            yield name, body

    def symbols_and_functions(self):
        """(name, symbol, code bytes) of every defined function; the symbol
        tells two instances of one generic function apart."""
        for i, body in enumerate(self.bodies):
            index = self.imported_functions + i
            name = self.names.get(index, f"function[{index}]")
            yield name, self.symbols.get(index, name), body

    @property
    def code(self):
        return sum(self.bodies)


HASH = re.compile(r"::h[0-9a-f]{16}$")
LEGACY_ESCAPES = {"LT": "<", "GT": ">", "C": ",", "RF": "&", "BP": "*", "SP": "@", "LP": "(", "RP": ")"}
PRIMITIVES = {"char", "str", "bool", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
              "i128", "isize", "f32", "f64"}


def demangle(symbol):
    """A readable name for a Rust symbol: legacy (`_ZN...E`) names exactly,
    v0 (`_R...`) names as the path of identifiers they spell, which is what
    a size report needs. The split step's shims keep their suffix."""
    symbol, _, suffix = symbol.partition(" ")
    symbol = re.sub(r"\.\d+$", "", symbol)
    if symbol.startswith("_ZN"):
        parts, i = [], 3
        while i < len(symbol) and symbol[i].isdigit():
            j = i
            while symbol[j].isdigit():
                j += 1
            n = int(symbol[i:j])
            part = symbol[j:j + n]
            i = j + n
            if re.fullmatch(r"h[0-9a-f]{16}", part):
                continue
            part = re.sub(r"^_\$", "$", part)
            part = re.sub(r"\$u([0-9a-f]+)\$", lambda m: chr(int(m.group(1), 16)), part)
            part = re.sub(r"\$([A-Z]+)\$", lambda m: LEGACY_ESCAPES.get(m.group(1), m.group(0)), part)
            parts.append(part.replace("..", "::"))
        name = "::".join(parts)
    elif symbol.startswith("_R"):
        # Identifiers are <decimal length><bytes>, optionally after an `_`
        # separator and a `s<base62>_` disambiguator; crate roots have a hash
        # disambiguator that is skipped the same way.
        parts, i = [], 2
        while i < len(symbol):
            skip = re.match(r"[Bs][0-9a-zA-Z]*_(?=\d)|B[0-9a-zA-Z]*_", symbol[i:])
            if skip:
                i += skip.end()
            elif symbol[i].isdigit():
                j = i
                while j < len(symbol) and symbol[j].isdigit():
                    j += 1
                n = int(symbol[i:j])
                if symbol[j:j + 1] == "_":
                    j += 1
                parts.append(symbol[j:j + n])
                i = j + n
            else:
                i += 1
        name = "::".join(p for p in parts if p)
    else:
        # Already readable; v0 names shown this way carry crate hashes.
        name = re.sub(r"\[[0-9a-f]+\]", "", symbol)
        name = re.sub(r"\$([A-Z]+)\$", lambda m: LEGACY_ESCAPES.get(m.group(1), m.group(0)), name)
    return f"{name} {suffix}".strip()


def short(name):
    """A function's name without its hash, shortened to a readable length."""
    name = HASH.sub("", name)
    return name if len(name) <= 110 else name[:107] + "..."


def crate_of(name):
    """The crate a function's code is counted for: the type's crate of a
    trait implementation (`<jobdeck_api::JobSpec as serde::Deserialize>`
    counts for jobdeck_api), the trait's of a blanket one, else the path's
    first segment."""
    generic = re.match(r"<(?:&(?:mut )?)?[A-Z] as (.*)", name)
    if generic:
        # A blanket implementation (`<T as Trait>`) counts for the trait's crate.
        name = generic.group(1)
    name = name.lstrip("<&*").replace("mut ", "").replace("dyn ", "").replace("const ", "")
    name = name.lstrip("(<&*[")
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", name)
    if not match:
        return "(other)"
    first = match.group(0)
    if first.startswith("__wasm_split_00"):
        # The body of a `#[lazy]` page function, the page's own code.
        return "jobdeck_console"
    if first == "function":
        return "(no name)"
    if first in PRIMITIVES:
        return "core"
    if first.startswith(("__wbg", "__wbindgen")):
        return "wasm_bindgen"
    return first if "::" in name[: len(first) + 2] else "(unnamed or extern)"


FAMILIES = {
    "serde (derive and generic code)": re.compile(r"serde"),
    "formatting (core::fmt, Display, Debug, format!)": re.compile(r"core::fmt|alloc::fmt|as core::fmt::"),
    "leptos / reactive_graph / tachys": re.compile(r"leptos|reactive_graph|tachys"),
    "wasm-bindgen glue and web-sys": re.compile(r"wasm_bindgen|web_sys|js_sys|__wbg|__wbindgen"),
    "allocation and collections": re.compile(r"alloc::|hashbrown|dlmalloc"),
}


def module_name(path):
    """A served file's module name: its name without trunk's content hash."""
    return re.sub(r"-[0-9a-f]{16}(_bg)?\.wasm$", lambda m: (m.group(1) or "") + ".wasm", os.path.basename(path))


def brotli_sizes(pages):
    """Brotli bytes per module name, from the benchmark's pages."""
    return {module_name(f["path"]): f["bytes"] for page in pages for f in page["files"]}


def kb(n):
    return f"{n / 1000:.1f} KB"


def code_digest(buf):
    """A digest of a module's code section (id 10), or None without one."""
    pos = 8
    while pos < len(buf):
        section, pos = buf[pos], pos + 1
        size, pos = leb_u32(buf, pos)
        if section == 10:
            return hashlib.sha256(buf[pos : pos + size]).hexdigest()
        pos += size
    return None


class Shipped:
    """The built console's modules, as served, mapped to the named ones."""

    def __init__(self, dist, modules):
        named = {}
        for m in modules:
            named.setdefault(code_digest(open(m.path, "rb").read()), m)
        self.by_bytes = {}
        self.named = {}
        for f in os.listdir(dist):
            if re.fullmatch(r"m\d+-[0-9a-f]{16}\.wasm", f):
                buf = open(os.path.join(dist, f), "rb").read()
                self.by_bytes[hashlib.sha256(buf).hexdigest()] = f
                self.named[f] = named.get(code_digest(buf))
        self.dist = dist

    def modules_of(self, served):
        """The named modules in one served file: a module, or a pack of them
        (`JDPK`, a count, then each module with its length)."""
        path = os.path.basename(served)
        if path in self.named:
            return [m for m in [self.named[path]] if m]
        if not path.endswith(".bin") or not os.path.exists(os.path.join(self.dist, path)):
            return []
        buf = open(os.path.join(self.dist, path), "rb").read()
        count, pos, found = struct.unpack_from("<I", buf, 4)[0], 8, []
        for _ in range(count):
            length = struct.unpack_from("<I", buf, pos)[0]
            part = self.by_bytes.get(hashlib.sha256(buf[pos + 4 : pos + 4 + length]).hexdigest())
            if part and self.named.get(part):
                found.append(self.named[part])
            pos += 4 + length
        return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--brotli", help="console_size.json of the console_size benchmark")
    parser.add_argument("--dist", help="the built console (trunk's dist), to name what packs hold")
    parser.add_argument("--moves", help="console_moves.json of the console_size benchmark")
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    pages = json.load(open(args.brotli)) if args.brotli and os.path.exists(args.brotli) else []
    brotli = brotli_sizes(pages)
    modules = [Module(os.path.join(args.dir, f)) for f in sorted(os.listdir(args.dir)) if f.endswith(".wasm")]
    if not modules:
        sys.exit(f"no .wasm files in {args.dir}")
    if not any(m.names for m in modules):
        sys.exit("the modules carry no name section; build them with wasm-opt -g")

    modules.sort(key=lambda m: -m.size)
    print("## Modules (largest first; code and data as built, brotli as the browser receives it)\n")
    print("| module | size | code | data | brotli | largest crates by code |")
    print("|---|---|---|---|---|---|")
    total_crates = collections.Counter()
    seen = collections.defaultdict(list)
    for m in modules:
        crates = collections.Counter()
        for name, symbol, size in m.symbols_and_functions():
            crates[crate_of(name)] += size
            # The split step's shims are small stand-ins, not copies.
            if not symbol.endswith("indirect_call_shim"):
                seen[(symbol, name)].append((os.path.basename(m.path), size))
        total_crates.update(crates)
        base = os.path.basename(m.path)
        top = ", ".join(f"{c} {100 * s / max(m.code, 1):.0f} %" for c, s in crates.most_common(4))
        print(f"| {base} | {kb(m.size)} | {kb(m.code)} | {kb(m.data)} | "
              f"{kb(brotli[base]) if base in brotli else '—'} | {top} |")

    code = sum(m.code for m in modules)
    print(f"\n## The whole console: {kb(sum(m.size for m in modules))} in {len(modules)} modules, "
          f"{kb(code)} of code, {kb(sum(m.data for m in modules))} of data\n")
    print("| crate | code | share |")
    print("|---|---|---|")
    for crate, size in total_crates.most_common(args.top * 2):
        print(f"| {crate} | {kb(size)} | {100 * size / code:.1f} % |")

    print("\n## Families of code\n")
    print("| family | code | share |")
    print("|---|---|---|")
    for family, pattern in FAMILIES.items():
        size = sum(s for m in modules for n, s in m.functions() if pattern.search(n))
        print(f"| {family} | {kb(size)} | {100 * size / code:.1f} % |")

    dupes = [(name, places) for name, places in seen.items() if len({p for p, _ in places}) > 1]
    extra = sum(sum(s for _, s in places) - max(s for _, s in places) for _, places in dupes)
    print(f"\n## Functions compiled into more than one module: {len(dupes)}, {kb(extra)} beyond one copy each\n")
    dupes.sort(key=lambda d: -(sum(s for _, s in d[1]) - max(s for _, s in d[1])))
    for (_, name), places in dupes[: args.top]:
        print(f"- {short(name)}: {len(places)} copies, {kb(sum(s for _, s in places))}")

    shipped = Shipped(args.dist, modules) if args.dist and os.path.isdir(args.dist) else None

    def named_list(files):
        """The named modules the served files hold, largest code first, as
        a table cell."""
        held = [m for f in files for m in (shipped.modules_of(f["path"]) if shipped else [])]
        held.sort(key=lambda m: -m.code)
        listed = ", ".join(f"{os.path.basename(m.path)[:-5]} {kb(m.code)}" for m in held[:6])
        more = f", {len(held) - 6} more {kb(sum(m.code for m in held[6:]))}" if len(held) > 6 else ""
        return held, listed + more

    if pages:
        print("\n## What each page loads, cold (brotli; the core and glue on every page)\n")
        print("| page | first load | named modules beyond the core, largest code first |")
        print("|---|---|---|")
        for page in pages:
            extra = [f for f in page["files"] if "_bg" not in f["path"]]
            print(f"| {page['page']} | {kb(page['total'])} | {named_list(extra)[1]} |")

    moves = json.load(open(args.moves)) if args.moves and os.path.exists(args.moves) else []
    if moves and shipped:
        print("\n## What each move adds (brotli as sent; code of the named modules, and their largest functions)\n")
        for move in moves:
            held, listed = named_list(move["files"])
            print(f"### {move['move']}: {kb(move['bytes'])}\n\n{listed}\n")
            functions = sorted(
                ((size, name, os.path.basename(m.path)) for m in held for name, size in m.functions()),
                reverse=True,
            )
            for size, name, where in functions[: args.top]:
                print(f"- {kb(size)} {short(name)} ({where[:-5]})")
            print()

    print(f"\n## Largest functions of each module (top {args.top})")
    for m in modules:
        print(f"\n### {os.path.basename(m.path)}\n")
        for name, size in sorted(m.functions(), key=lambda f: -f[1])[: args.top]:
            print(f"- {kb(size)} {short(name)}")


if __name__ == "__main__":
    main()
