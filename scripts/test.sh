#!/usr/bin/env bash
# Checks the formatting and lints, then runs every test: unit and API tests
# of each crate, the console's component tests in headless Chromium, the
# end-to-end tests (the real server, the real built console, Chromium over
# WebDriver, the real `lep` CLI and TAO SDK from Python virtual
# environments) and Schemathesis fuzzing the server. Installs what is missing
# first. The last line is the summary over all suites.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --browser || exit 1
export PATH="$HOME/.cargo/bin:$PATH"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# A clean clone gains nothing from incremental compilation's caches (3 GB
# under target/debug/incremental in a full run), so CI builds without them;
# the run's disk use is in docs/measurements.md, "What a test run writes to
# disk". The free space is printed first: a full disk fails every build.
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi
echo "==> disk: $(df -h . | awk 'NR == 2 {print $4 " free of " $2}')"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
step() {
  echo "==> $*"
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    echo "==> FAILED (exit $rc): $*"
    status=1
  fi
  return 0
}

# The real `lep` CLI for tests/lep_cli.rs and the TAO SDK for
# tests/tao_sdk.rs. A failure here does not stop the run: those tests then
# fail saying the venv is missing, and the summary still comes last.
step scripts/setup.sh --lep
step scripts/setup.sh --tao
step scripts/setup.sh --fuzz
# Python's aiosmtpd, the SMTP server the email notifications are sent to
# (crates/server/tests/api/notification_email.rs).
step scripts/setup.sh --smtp
# The OpenID Connect provider of tests/sso.rs.
step scripts/setup.sh --oidc
# podman, the registry and the test image's busybox for tests/containers.rs.
step scripts/setup.sh --containers
# A one-node Slurm cluster, started here, for tests/slurm.rs.
step scripts/setup.sh --slurm
# The code's form and lints (rustfmt.toml, [workspace.lints] in Cargo.toml):
# a formatting difference or a clippy warning fails the run.
step cargo fmt --all -- --check
step cargo clippy --workspace --exclude jobdeck-console --all-targets -- -D warnings
step cargo clippy --target wasm32-unknown-unknown -p jobdeck-console --lib --tests -- -D warnings
step trunk build --release --offline
step cargo build -p jobdeck-server
step cargo test --workspace --exclude jobdeck-console --no-fail-fast
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  step cargo test --target wasm32-unknown-unknown -p jobdeck-console --lib
# Schemathesis against the real server, from its openapi.json.
step scripts/fuzz.sh

read -r passed failed < <(awk '/^test result:/ {
    for (i = 1; i <= NF; i++) {
      if ($(i) ~ /^passed/) p += $(i - 1)
      if ($(i) ~ /^failed/) f += $(i - 1)
    }
  } END { print p + 0, f + 0 }' "$log")
passed=${passed:-0}
failed=${failed:-0}
if [ "$status" != 0 ] && [ "$failed" = 0 ]; then
  # A build or a runner failed before any test could report.
  failed=1
fi
echo "$passed passed, $failed failed"
[ "$status" = 0 ] && [ "$failed" = 0 ]
