#!/usr/bin/env bash
# Fuzzes the real server from its own openapi.json with Schemathesis (pinned in
# tests/fuzz-requirements.txt, installed into tests/.fuzz-venv by
# scripts/setup.sh --fuzz): every operation, a fixed seed and a bounded number
# of cases (FUZZ_EXAMPLES per operation, default 60), checking that nothing
# answers a server error, that every status code and response body is the one
# documented, and that input the schema forbids is refused. Fuzzed job
# commands never run (tests/fuzz/hooks.py makes them `true`). Prints
# `test result: ok. 1 passed; 0 failed` (or FAILED) for the summary of
# scripts/test.sh. Needs the debug server built (scripts/test.sh builds it).
set -uo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
bin="${JOBDECK_BIN:-$target/debug/jobdeck}"
venv="${JOBDECK_FUZZ_VENV:-tests/.fuzz-venv}"
seed="${FUZZ_SEED:-20261125}"
examples="${FUZZ_EXAMPLES:-60}"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "fuzz: $*"
  echo "test result: FAILED. 0 passed; 1 failed"
  exit 1
}
[ -x "$bin" ] || fail "$bin is missing: build it with cargo build -p jobdeck-server"
[ -x "$venv/bin/schemathesis" ] || fail "$venv has no schemathesis: run scripts/setup.sh --fuzz"
# Absolute, because the run below starts from tests/fuzz.
schemathesis="$(cd "$venv/bin" && pwd)/schemathesis"

# Process mode: a fuzzed image name must never reach a container engine,
# which would try to pull it from the internet.
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --local-mode process >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  grep -q "^Sign in as admin: " "$work/server.log" && break
  sleep 0.1
done
base="$(sed -n 's/^Jobdeck is listening on \(.*\)\/$/\1/p' "$work/server.log")"
token="$(sed -n 's/^Sign in as admin: .*#token=//p' "$work/server.log")"
[ -n "$base" ] && [ -n "$token" ] || fail "the server did not start: $(cat "$work/server.log")"
api="$base/api/v2"
auth="Authorization: Bearer $token"

# Things that exist, for the operations that need an id (tests/fuzz/hooks.py).
job="$(curl -sf -H "$auth" -H 'Content-Type: application/json' \
  -d '{"metadata": {"name": "fuzz-target"}, "spec": {"container": {"command": ["true"]}}}' "$api/jobs" \
  | sed -n 's/.*"id":"\(fuzz-target-[a-z0-9]*\)".*/\1/p')"
[ -n "$job" ] || fail "could not create the fixture job"
curl -sf -H "$auth" -H 'Content-Type: application/json' -d '[{"name": "FUZZ_SECRET", "value": "x"}]' "$api/usersecrets" >/dev/null \
  || fail "could not create the fixture secret"

# The fuzzer's own token must never be what a fuzzed `DELETE /tokens/{id}`
# revokes: such a request gets a token made for it instead, or a made-up id
# (tests/fuzz/hooks.py).
own_token="$(curl -sf -H "$auth" "$api/tokens" \
  | python3 -c 'import json, sys; print(next(t["id"] for t in json.load(sys.stdin) if t.get("current")))')"
victim_token="$("$bin" token create --user admin --name fuzz-victim --data-dir "$work/data" 2>&1 >/dev/null \
  | sed -n 's/^token \([0-9]*\) for .*/\1/p')"
[ -n "$own_token" ] && [ -n "$victim_token" ] || fail "could not find the fuzzer's token or make one to revoke"

cd tests/fuzz
# `GET /stream` is left out: a valid request is a stream that stays open
# (tests/api/live_stream.rs tests it, and its bad queries).
# One worker: Schemathesis' workers are threads, and CPython 3.11 before
# 3.11.8 keeps the AST constructor's recursion depth in state the threads
# share, so two threads parsing source at once (Hypothesis describing a
# strategy) can fail the run with "SystemError: AST constructor recursion
# depth mismatch" (python/cpython#106905), a flake of the fuzzer, not of
# the server.
JOBDECK_FUZZ_JOB="$job" JOBDECK_FUZZ_SECRET=FUZZ_SECRET SCHEMATHESIS_HOOKS=hooks \
  JOBDECK_FUZZ_OWN_TOKEN="$own_token" JOBDECK_FUZZ_VICTIM_TOKEN="$victim_token" \
  "$schemathesis" run "$api/openapi.json" \
  -H "$auth" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,negative_data_rejection \
  --phases examples,coverage,fuzzing,stateful \
  --seed "$seed" --max-examples "$examples" --workers 1 --request-timeout 60 \
  --exclude-path /stream \
  ${FUZZ_EXTRA:-} --no-color 2>&1 | tee "$work/fuzz.log" | grep -E "^(API Operations|  Selected|  Tested|Test cases|  [0-9]+ generated|Seed|=+ .*(passed|failures?|warnings?|errors?)|- ST|_{5,}.*_{5,}|    curl )"
status=${PIPESTATUS[0]}
if [ "$status" = 0 ]; then
  echo "test result: ok. 1 passed; 0 failed"
else
  tail -60 "$work/fuzz.log"
  echo "test result: FAILED. 0 passed; 1 failed"
fi
exit "$status"
