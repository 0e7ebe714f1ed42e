#!/usr/bin/env bash
# Builds and starts Jobdeck with the embedded defaults: SQLite in
# ./jobdeck-data, the local executor, and the console on
# http://127.0.0.1:8080/. Extra arguments go to `jobdeck serve`
# (for example --listen 127.0.0.1:9000 or --config jobdeck.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"

echo "==> building the console"
trunk build --release --offline
echo "==> building the server"
cargo build --release -p jobdeck-server
exec "${CARGO_TARGET_DIR:-target}/release/jobdeck" serve --console-dir dist "$@"
