#!/usr/bin/env bash
# Every rank's log on one timeline (issue 36): Lepton's GET /logs, which
# merges a job's attempts by time, over 8 replicas of 1,000,000 lines each
# through the real router: the newest, a middle and the oldest screen, one
# replica's, and a text search; then the console's merged view
# (GET /jobs/{id}/merged-log) at the same places and its whole download.
# The figures are in docs/measurements.md.
# Usage: bench/merged-logs.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench merged_logs 2>&1 | grep -v 'INFO\|WARN'
