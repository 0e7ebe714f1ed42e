#!/usr/bin/env bash
# What reading a job body costs: `wire::from_json` (the typed read with
# field paths and the check for arrays read as objects) against a plain
# `serde_json::from_slice`, on what `lep` sends and on a large body
# (crates/api/benches/wire.rs). Prints a table for docs/measurements.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p jobdeck-api --bench wire
