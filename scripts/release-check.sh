#!/usr/bin/env bash
# release-check.sh checks, before a tag, that version VERSION of the core
# (and of the sibling modules, tagged k8s/VERSION, gocronlease/VERSION,
# otel/VERSION) can be released:
#
#   1. CHANGELOG.md has a section "## VERSION".
#   2. Every sibling's go.mod requires the core at VERSION, with no replace;
#      go.work's replace names VERSION.
#   3. The core's API against the last tag (apidiff): an incompatible change
#      fails unless the major version moves (for v0, the minor).
#   4. Outside the workspace, each sibling tidies, builds, vets and runs its
#      tests against the core at VERSION, fetched from a local module proxy
#      made from this tree, as a user's `go get` would fetch the tag.
#
# It changes nothing in the tree. Environment: VERSION (required), GO.
# Step 4 runs the siblings' tests; those that need DynamoDB find it in
# DYNAMODB_ENDPOINT (make release-check starts DynamoDB Local).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

go_cmd="${GO:-go}"
core="github.com/dynalease/dynalease"
siblings=(k8s gocronlease otel)
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

# 2. The siblings require the core at VERSION, without replace.
for m in "${siblings[@]}"; do
	grep -q "^replace" "$m/go.mod" && fail "$m/go.mod has a replace directive: the workspace (go.work) replaces, go.mod must not"
	req="$(cd "$m" && GOWORK=off "$go_cmd" mod edit -print | awk -v m="$core" '
		/^require \(/ { block = 1; next }
		/^\)/ { block = 0; next }
		block && $1 == m { print $2 }
		$1 == "require" && $2 == m { print $3 }')"
	[[ "$req" == "$version" ]] || fail "$m/go.mod requires ${core} ${req:-(none)}, not ${version}"
done
grep -q "^replace ${core} ${version} => ./" go.work || fail "go.work does not replace ${core} ${version} with this tree"
say "the siblings require ${core} ${version}, with no replace"

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

# 4. Each sibling outside the workspace, against the core at VERSION from a
# local proxy. The module's zip is the tree's tracked files at HEAD, less
# the siblings' directories (modules of their own), as the Go module proxy
# makes it from the tag.
proxy="$work/proxy/${core}/@v"
mkdir -p "$proxy" "$work/zip"
git archive --format=tar HEAD -- . $(printf ":(exclude)%s " "${siblings[@]}") | tar -x -C "$work/zip"
[[ -z "$(cd "$work/zip" && find . -mindepth 2 -name go.mod)" ]] || fail "a directory with a go.mod of its own is not in the siblings list: add it"
git show HEAD:go.mod >"$proxy/${version}.mod"
printf '%s\n' "$version" >"$proxy/list"
printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git log -1 --format=%cI HEAD)" >"$proxy/${version}.info"
(cd "$work/zip" && GOWORK=off "$go_cmd" run "$root/scripts/modzip.go" "$core@$version" "$proxy/${version}.zip")
for m in "${siblings[@]}"; do
	git archive --format=tar HEAD -- "$m" | tar -x -C "$work"
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
