#!/usr/bin/env bash
# Where a queued job stands (issue 38): GET /jobs/{id} of the last of QUEUED
# (default 1,000) jobs queued behind holders of both node groups, through
# the real router, each answer with its place, its start suggestions tried
# (none fits) and its estimate (no basis), against a running job's GET, and
# GET /queue, the whole queue.
# The figures are in docs/measurements.md.
# Usage: bench/queue-position.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench queue_position 2>&1 | grep -v 'INFO\|WARN'
