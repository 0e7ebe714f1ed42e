#!/usr/bin/env bash
# Log-pattern notifications (issue 38): how fast the condition watch reads a
# log for a rule's pattern, against how fast the log store's writer takes
# lines in (the replica supervisor's own path). The figures are in
# docs/measurements.md.
# Usage: bench/log-patterns.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench log_patterns
