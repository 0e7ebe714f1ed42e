#!/usr/bin/env bash
# Notifications (issue 38): a job's state write with and without rules (what
# the scheduler pays), and how soon and how fast transitions reach a webhook
# receiver on loopback, through the server's own notifier. The figures are
# in docs/measurements.md.
# Usage: bench/notifications.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench notifications 2>&1 | grep -v 'INFO\|WARN'
