#!/usr/bin/env bash
# The log format (issue 37): the sustained ingest of the corpus and of
# short lines fed from memory (LOG_FORMAT_INGEST_LINES, default
# 20,000,000; 0 leaves it out), bytes on disk against the text a training
# run prints, ingest through the supervisor's path, a fresh reader's first
# screen at either end and anywhere, and searches over the whole log, for
# the block format at 100,000,000 lines and the plain format (the one
# before) at 10,000,000, on the corpus of crates/store/benches/corpus
# (seed in the file). Needs about 5 GB free under target/bench (or
# LOG_FORMAT_DIR); LOG_FORMAT_LINES and LOG_FORMAT_PLAIN_LINES change the
# sizes. The figures are in docs/measurements.md ("Compressed logs" and
# "Sustained ingest").
# Usage: bench/log-format.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p jobdeck-store --bench log_format
