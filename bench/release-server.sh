# Sourced by the benchmarks that run the release server: builds it unless
# the benchmark was given --no-build, exports JOBDECK_BIN (absolute) for the
# benches, and prints the machine and the commit the figures belong to.
# Expects to be sourced from the repository root with "$@" as its
# arguments.
export PATH="$HOME/.cargo/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
if [ "${1:-}" != "--no-build" ]; then
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="$target/release/jobdeck"
case "$JOBDECK_BIN" in /*) ;; *) JOBDECK_BIN="$PWD/$JOBDECK_BIN" ;; esac
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "server: $JOBDECK_BIN ($(git rev-parse --short HEAD))"
# The benchmarks measure the server as it runs in production, writing its
# request log (one line per request, request_log.rs); the scripts leave
# those lines out of what they print.
export JOBDECK_LOG="${JOBDECK_LOG:-info}"
