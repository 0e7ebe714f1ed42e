#!/usr/bin/env python3
"""Prints the console's first-load size: every html, js, wasm and css file in
dist/ (as trunk builds it), raw and brotli-compressed at quality 11, which is
what the server's compression layer serves to browsers that accept br.

Usage: trunk build --release --offline && python3 bench/console_size.py [dist]
"""
import pathlib
import sys

import brotli

dist = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
total_raw = total_br = 0
for path in sorted(dist.iterdir()):
    if path.suffix not in {".html", ".js", ".wasm", ".css"}:
        continue
    data = path.read_bytes()
    compressed = len(brotli.compress(data, quality=11))
    total_raw += len(data)
    total_br += compressed
    print(f"{path.name:50} {len(data):>9} raw {compressed:>8} br")
print(f"{'total':50} {total_raw:>9} raw {total_br:>8} br ({total_br / 1024:.1f} KiB)")
