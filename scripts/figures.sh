#!/usr/bin/env bash
# figures.sh prints the size and surface of the core packages, the figures
# the kernel work (issue 28) is measured by:
#   - non-test lines per core package;
#   - `go doc -short` lines and exported identifiers per public package;
#   - the sentinel errors (exported `Err...` variables) of the public packages;
#   - the ten longest functions of the core, in lines.
# It reads the code only; nothing is built or run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
core=(. election lock resourcelock resourcelock/dynamodbstore internal/rvnlease internal/keylease internal/setlease internal/record internal/timing clockutil metrics health)
public=(. election lock resourcelock resourcelock/dynamodbstore metrics health)
src() { ls "$1"/*.go 2>/dev/null | grep -v '_test\.go$' || true; }

echo "non-test lines per core package:"
total=0
for d in "${core[@]}"; do
	n=$(cat $(src "$d") | wc -l)
	total=$((total + n))
	printf '  %-28s %6d\n' "$d" "$n"
done
printf '  %-28s %6d\n' "total" "$total"

echo "public surface per package (go doc -short lines, exported identifiers):"
dl=0; ids=0
for d in "${public[@]}"; do
	n=$(go doc -short "./$d" 2>/dev/null | wc -l)
	# Exported top-level names, methods and fields of exported types.
	e=$(go doc -all "./$d" 2>/dev/null | grep -cE '^(func|type|var|const) [A-Z]|^func \([^)]*\) [A-Z]|^    [A-Z][A-Za-z0-9_]* ' || true)
	dl=$((dl + n)); ids=$((ids + e))
	printf '  %-28s %4d lines %5d identifiers\n' "$d" "$n" "$e"
done
printf '  %-28s %4d lines %5d identifiers\n' "total" "$dl" "$ids"

echo "sentinel errors (exported Err... variables):"
n=0
for d in "${public[@]}"; do
	for e in $(grep -hoE '^\s*(var )?Err[A-Za-z0-9]+ += ' $(src "$d") | grep -oE 'Err[A-Za-z0-9]+' || true); do
		printf '  %s.%s\n' "$d" "$e"; n=$((n + 1))
	done
done
echo "  total $n"

echo "the ten longest functions of the core:"
files=$(for d in "${core[@]}"; do src "$d"; done)
awk '/^func /{n=$0; s=FNR; f=1; next} f && /^}/{ printf "%d %s:%d %s\n", FNR-s+1, FILENAME, s, substr(n,1,70); f=0 }' $files |
	sort -rn | head -10 | sed 's/^/  /'
