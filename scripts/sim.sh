#!/usr/bin/env bash
# sim.sh runs the deterministic simulator's histories (internal/sim):
# SEEDS seeds from SEED, shared among SIM_PROCS processes (each on one core,
# GOMAXPROCS=1, without the race detector: a history is one goroutine at a
# time anyway), and prints how many histories a second each ran. With
# COVER=1 it then runs each kind alone with coverage and prints which part
# of the kernel and of each kind's port its histories reached.
#
# Environment: SEEDS (2000), SEED (1), SIM_PROCS (cores), COVER, GO.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seeds="${SEEDS:-2000}"
seed="${SEED:-1}"
procs="${SIM_PROCS:-2}"
go_cmd="${GO:-go}"
bin=.cache/sim/sim.test
mkdir -p .cache/sim
"$go_cmd" test -c -o "$bin" ./internal/sim

start=$(date +%s.%N)
pids=()
for ((i = 0; i < procs; i++)); do
	GOGC=400 GOMAXPROCS=1 "$bin" -test.run 'TestSimulation$' -test.v -test.timeout 60m \
		-sim.seeds="$seeds" -sim.seed="$seed" -sim.shard="$i" -sim.shards="$procs" >".cache/sim/shard-$i.log" 2>&1 &
	pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
	if ! wait "${pids[$i]}"; then
		failed=1
		echo "sim: shard $i failed:" >&2
		grep -v '^=== RUN' ".cache/sim/shard-$i.log" >&2 || true
	fi
done
end=$(date +%s.%N)
if ((failed)); then
	exit 1
fi
grep -h 'histories in' .cache/sim/shard-*.log | sed 's/^ *sim_test.go:[0-9]*: /sim: one core: /'
awk -v n="$seeds" -v s="$start" -v e="$end" -v p="$procs" 'BEGIN { printf "sim: %d histories in %.1f s on %d processes: %.1f a second\n", n, e - s, p, n / (e - s) }'

if [[ -n "${COVER:-}" ]]; then
	pkgs=./internal/rvnlease,./internal/keylease,./internal/readlease,./internal/setlease,./internal/candidacy,./lock,./election,./schedule
	for kind in lock set permit rw elect job; do
		GOGC=400 GOMAXPROCS=1 "$go_cmd" test ./internal/sim -run 'TestSimulation$' -count=1 \
			-coverpkg="$pkgs" -coverprofile=".cache/sim/cover-$kind.out" \
			-sim.seeds=$((seeds < 200 ? seeds : 200)) -sim.seed="$seed" -sim.kinds="$kind" >/dev/null
	done
	"$go_cmd" run ./scripts/simcover .cache/sim/cover-{lock,set,permit,rw,elect,job}.out
fi
