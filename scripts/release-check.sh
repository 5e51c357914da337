#!/usr/bin/env bash
# release-check.sh checks, before a tag, that version VERSION of the core
# and of its sibling modules (go.work's other modules, each tagged
# DIR/VERSION: cmd/dynalease/VERSION, k8s/VERSION, ...) can be released:
#
#   1. CHANGELOG.md has a section "## VERSION".
#   2. Every sibling's go.mod requires the core, and any sibling it needs,
#      at VERSION, with no replace; go.work replaces those at VERSION.
#   3. The core's API against the last tag (apidiff): an incompatible change
#      fails unless the major version moves (for v0, the minor).
#   4. Outside the workspace, each sibling tidies, builds, vets and runs its
#      tests against the core (and siblings) at VERSION, fetched from a
#      local module proxy made from this tree, as a user's `go get` would
#      fetch the tags.
#
# It changes nothing in the tree. Environment: VERSION (required), GO.
# Step 4 runs the siblings' tests; those that need DynamoDB find it in
# DYNAMODB_ENDPOINT (make release-check starts DynamoDB Local).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

go_cmd="${GO:-go}"
core="github.com/dynalease/dynalease"
# The siblings: go.work's use block, less the core (the one list of the
# modules; the Makefile reads it too).
# (A while loop, not mapfile, for bash 3.2.)
siblings=()
while read -r m; do
	siblings+=("$m")
done < <(awk '/^use \(/ { u = 1; next } u && /^\)/ { u = 0; next } /^use [^(]/ { $1 = ""; u1 = 1 } (u || u1) && $1 !~ /^\/\// { d = u1 ? $2 : $1; u1 = 0; if (d != "." && d != "") { sub(/^\.\//, "", d); print d } }' go.work)
[[ ${#siblings[@]} -gt 0 ]] || { echo "release-check: FAIL: no sibling modules in go.work" >&2; exit 1; }
apidiff="golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4"

fail() { printf 'release-check: FAIL: %s\n' "$*" >&2; exit 1; }
say() { printf 'release-check: %s\n' "$*" >&2; }

[[ -z "$(git status --porcelain)" ]] || fail "the tree has uncommitted changes: commit first (the check reads HEAD)"

version="${VERSION:-}"
[[ "$version" =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || fail "VERSION must be vMAJOR.MINOR.PATCH, got '${version}'"
major="${BASH_REMATCH[1]}" minor="${BASH_REMATCH[2]}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# 1. The CHANGELOG's section.
grep -q "^## ${version}\b" CHANGELOG.md || fail "CHANGELOG.md has no section '## ${version}' (rename '## Unreleased')"
say "CHANGELOG.md has its section for ${version}"

# 2. The siblings require the core, and the siblings they need, at VERSION,
# without replace; the workspace replaces each of those with its directory.
for m in "${siblings[@]}"; do
	grep -q "^replace" "$m/go.mod" && fail "$m/go.mod has a replace directive: the workspace (go.work) replaces, go.mod must not"
	reqs="$(cd "$m" && GOWORK=off "$go_cmd" mod edit -print | awk -v m="$core" '
		/^require \(/ { block = 1; next }
		/^\)/ { block = 0; next }
		block && ($1 == m || index($1, m "/") == 1) { print $1, $2 }
		$1 == "require" && ($2 == m || index($2, m "/") == 1) { print $2, $3 }')"
	grep -q "^${core} " <<<"$reqs" || fail "$m/go.mod does not require ${core}"
	while read -r path req; do
		[[ "$req" == "$version" ]] || fail "$m/go.mod requires ${path} ${req}, not ${version}"
		dir="./${path#"$core"/}"
		[[ "$path" == "$core" ]] && dir="./"
		sed -e 's/^[[:space:]]*//' -e 's/^replace[[:space:]]*//' go.work | grep -qxF "${path} ${version} => ${dir}" ||
			fail "go.work does not replace ${path} ${version} with ${dir}"
	done <<<"$reqs"
done
say "the siblings require the modules of ${core} at ${version}, with no replace"

# 3. The API against the last tag.
last="$(git tag -l 'v*' --sort=-v:refname | head -n1)"
if [[ -z "$last" ]]; then
	say "no earlier tag: no API to compare with (the first release)"
else
	[[ "$last" =~ ^v([0-9]+)\.([0-9]+)\. ]] || fail "last tag '${last}' is not a version"
	lmajor="${BASH_REMATCH[1]}" lminor="${BASH_REMATCH[2]}"
	git worktree add -q --detach "$work/old" "$last"
	trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
	(cd "$work/old" && GOWORK=off "$go_cmd" run "$apidiff" -m -w "$work/old.api" "$core")
	GOWORK=off "$go_cmd" run "$apidiff" -m -w "$work/new.api" "$core"
	# Internal packages and commands are no one's API.
	incompatible="$(GOWORK=off "$go_cmd" run "$apidiff" -m -incompatible "$work/old.api" "$work/new.api" |
		grep -v -e '/internal/' -e '^Ignoring' -e '/cmd/' -e '/examples/' -e '/bench' -e '/chaos' || true)"
	moved=false
	if [[ "$major" != "$lmajor" ]] || [[ "$major" == 0 && "$minor" != "$lminor" ]]; then moved=true; fi
	if [[ -n "$incompatible" ]]; then
		printf '%s\n' "$incompatible" >&2
		$moved || fail "incompatible API changes since ${last}, and ${version} does not move the $([[ $major == 0 ]] && echo minor || echo major) version"
		say "incompatible API changes since ${last}, allowed by the move to ${version}"
	else
		say "no incompatible API change since ${last}"
	fi
fi

# 4. Each sibling outside the workspace, against the core and the siblings
# at VERSION from a local proxy. A module's zip is the tree's tracked files
# at HEAD under its directory, less the directories of the modules nested
# in it, as the Go module proxy makes it from the tag.
# serve DIR MODULE: put MODULE at VERSION, from DIR, in the local proxy.
serve() {
	local dir="$1" mod="$2" out="$work/proxy/$2/@v" src="$work/src/${2//\//_}" m
	mkdir -p "$out" "$src"
	local excl=()
	for m in "${siblings[@]}"; do
		if [[ "$dir" == "." ]]; then excl+=(":(exclude)$m"); elif [[ "$m" == "$dir"/* ]]; then excl+=(":(exclude)$m"); fi
	done
	git archive --format=tar HEAD -- "$dir" ${excl[@]+"${excl[@]}"} | tar -x -C "$src"
	[[ -z "$(cd "$src/$dir" && find . -mindepth 2 -name go.mod)" ]] || fail "a directory under $dir with a go.mod of its own is not in go.work"
	git show "HEAD:$dir/go.mod" >"$out/${version}.mod"
	printf '%s\n' "$version" >"$out/list"
	printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git log -1 --format=%cI HEAD)" >"$out/${version}.info"
	(cd "$src/$dir" && "$work/modzip" "$mod@$version" "$out/${version}.zip")
}
GOWORK=off "$go_cmd" build -o "$work/modzip" scripts/modzip.go
serve . "$core"
for m in "${siblings[@]}"; do
	serve "$m" "$core/$m"
done
for m in "${siblings[@]}"; do
	mkdir -p "$work/$m" && git archive --format=tar HEAD -- "$m" | tar -x -C "$work"
	say "$m: tidy, build, vet and test outside the workspace, against ${core} ${version}"
	# A module cache of its own: the core at VERSION built here must not
	# linger where a later check, or the real tag, would find it.
	(
		cd "$work/$m" &&
			export GOWORK=off GOFLAGS="-mod=mod -modcacherw" GOMODCACHE="$work/modcache" GONOSUMDB="$core" \
				GOPROXY="file://$work/proxy,$("$go_cmd" env GOPROXY)" &&
			"$go_cmd" mod tidy &&
			"$go_cmd" build ./... &&
			"$go_cmd" vet ./... &&
			"$go_cmd" test -count=1 ./...
	) || fail "$m does not build or test against ${core} ${version} outside the workspace"
done
say "all checks passed for ${version}"
