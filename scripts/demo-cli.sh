#!/bin/sh
# demo-cli.sh: the second half of "make demo": the dynalease command.
#
# Two "dynalease elect" processes stand for one election, each running a
# shell loop that prints while it leads. The demo kills the leader's
# dynalease with SIGKILL (a crash: its loop dies with it, the lease is left
# to run out) and waits for the other's loop to start; then it stops the
# survivor with SIGTERM (a graceful handover). It ends by itself, within a
# minute, and exits non-zero if no loop took over.
#
# Needs DYNAMODB_ENDPOINT (make demo starts DynamoDB Local and sets it).
set -eu

: "${DYNAMODB_ENDPOINT:?set DYNAMODB_ENDPOINT (make demo does)}"
GO=${GO:-go}
dir=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] && echo "kept $dir" || rm -rf "$dir"
}
trap cleanup EXIT INT TERM

say() { printf 'demo-cli %s  %s\n' "$(date +%H:%M:%S.%3N)" "$*"; }

$GO build -o "$dir/dynalease" ./cmd/dynalease
export DYNALEASE_ENDPOINT="$DYNAMODB_ENDPOINT" DYNALEASE_TABLE="demo-cli-$$"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-local}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-local}" AWS_REGION="${AWS_REGION:-us-east-1}"
"$dir/dynalease" create-table >/dev/null
say "table $DYNALEASE_TABLE created; starting two candidates (lease 4s, grace 500ms)"

start() { # start NAME: a candidate whose loop prints while it leads
	"$dir/dynalease" --owner="$1" --lease=4s elect --retry=200ms --grace=500ms demo -- \
		sh -c 'while true; do echo "    [$DYNALEASE_LOCK_OWNER] leading, token $DYNALEASE_TOKEN"; sleep 0.5; done' \
		>"$dir/$1.out" 2>&1 &
	pids="$pids $!"
	echo $! >"$dir/$1.pid"
}
wait_for() { # wait_for NAME SECONDS: until NAME's loop has printed
	i=0
	while [ ! -s "$dir/$1.out" ]; do
		i=$((i + 1))
		if [ "$i" -gt $(($2 * 20)) ]; then return 1; fi
		sleep 0.05
	done
}

start cand-1
wait_for cand-1 15 || { say "no leader within 15s"; exit 1; }
start cand-2
sleep 2
head -n 2 "$dir/cand-1.out"
if [ -s "$dir/cand-2.out" ]; then say "both candidates lead"; exit 1; fi
say "cand-1 leads; killing its dynalease with SIGKILL (its loop dies with it)"
kill -9 "$(cat "$dir/cand-1.pid")"
killed=$(date +%s%N)
wait_for cand-2 15 || { say "cand-2 never took over"; exit 1; }
took=$(( ($(date +%s%N) - killed) / 1000000 ))
head -n 2 "$dir/cand-2.out"
say "cand-2 took over ${took} ms after the crash (a lease is 4000 ms)"
kill -TERM "$(cat "$dir/cand-2.pid")"
wait "$(cat "$dir/cand-2.pid")" 2>/dev/null || true
say "cand-2 stopped with SIGTERM: its loop was stopped, then the lease released"
"$dir/dynalease" get demo
say "done"
