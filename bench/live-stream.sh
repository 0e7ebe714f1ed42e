#!/usr/bin/env bash
# Event stream benchmark against the release server: 100 list streams, 100
# job streams and 20 log streams open at once on loopback; how long a new job
# takes from its POST to each list stream and to its row in one headless
# Chromium's deployments list (the console on its own stream), and a log line
# from its writing to its follower. STREAM_CHANGES (default 50) jobs are
# created, one every 200 ms. Needs Chromium (scripts/setup.sh --browser) and
# the built console (trunk build --release). The figures are in
# docs/measurements.md.
# Usage: bench/live-stream.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
# 220 client threads and their connections, plus the server's.
ulimit -n 4096 2>/dev/null || true
cargo bench -q -p jobdeck-e2e --bench live_stream 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{'
