#!/usr/bin/env bash
# test-loaded.sh runs the test suite on a deliberately busy machine, as users
# run it on laptops doing other work and on shared CI machines: BUSY_LOOPS
# CPU-bound loops (yes > /dev/null) run beside it the whole time.
#
#   1. "make test" LOADED_RUNS times in a row (default 5);
#   2. the fake-clock unit tests of election and lock FAKE_RUNS times in a
#      row under -race (default 50), in one go test with -count.
#
# It stops at the first failure and exits non-zero; otherwise it prints the
# pass counts and wall times. Nothing here asserts a figure: a test that
# fails only because the machine is busy is a broken test, and this is how
# such tests are found.
#
# Environment: BUSY_LOOPS (default 2), LOADED_RUNS (5), FAKE_RUNS (50), GO.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

busy_loops="${BUSY_LOOPS:-2}"
loaded_runs="${LOADED_RUNS:-5}"
fake_runs="${FAKE_RUNS:-50}"
go_cmd="${GO:-go}"

log() { printf 'test-loaded: %s\n' "$*" >&2; }

pids=()
stop_loops() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop_loops EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for ((i = 0; i < busy_loops; i++)); do
	yes >/dev/null &
	pids+=($!)
done
log "$busy_loops busy loops running (pids ${pids[*]})"

summary=()
for ((run = 1; run <= loaded_runs; run++)); do
	log "make test, run $run of $loaded_runs"
	start=$SECONDS
	if ! make test; then
		log "FAILED: make test run $run of $loaded_runs (after $((SECONDS - start)) s); $((run - 1)) passed before it"
		exit 1
	fi
	summary+=("make test run $run: passed in $((SECONDS - start)) s")
done

# The integration tests are all named TestDynamoDB*; what is left in these
# two packages runs on a fake clock over the in-memory store.
log "fake-clock unit tests of election and lock, -race -count=$fake_runs"
start=$SECONDS
if ! "$go_cmd" test -race -count="$fake_runs" -skip '^TestDynamoDB' ./election ./lock; then
	log "FAILED: fake-clock unit tests under load (after $((SECONDS - start)) s)"
	exit 1
fi
summary+=("fake-clock unit tests of election and lock: $fake_runs runs passed in $((SECONDS - start)) s")

log "all passed with $busy_loops busy loops:"
for line in "${summary[@]}"; do log "  $line"; done
