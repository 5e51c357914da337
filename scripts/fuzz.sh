#!/usr/bin/env bash
# make fuzz: run every Go fuzz target of the module for FUZZTIME each
# (default 1m), one after the other, and print the executions of each.
# A failing input is written by go test into the package's
# testdata/fuzz/<Target>/ directory: commit it with the fix, and it runs
# with the other seeds in every make test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-1m}"
status=0
summary=()
while IFS=: read -r file target; do
	pkg="$(dirname "$file")"
	echo "== $pkg $target ($FUZZTIME)"
	log="$(mktemp)"
	if "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$log" | grep -v '^fuzz: elapsed'; then
		:
	fi
	if grep -q -e '^--- FAIL' -e '^FAIL' "$log"; then
		status=1
		summary+=("$target: FAILED (the failing input is in $pkg/testdata/fuzz/$target)")
	else
		execs="$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)"
		summary+=("$target: ${execs:-0} executions, no failure")
	fi
	rm -f "$log"
done < <(grep -o '^func Fuzz[A-Za-z0-9_]*' -r --include='*_test.go' . | grep -v '^./.cache' | sed 's/func //' | sort)
echo
printf '%s\n' "${summary[@]}"
exit "$status"
