# Developer entry points. Everything that needs DynamoDB goes through
# scripts/dynamodb-local.sh, which starts a private DynamoDB Local for the
# duration of one command and always stops it afterwards. To use a server you
# already run instead, set DYNAMODB_ENDPOINT (e.g. http://127.0.0.1:8000).

GO ?= go
DDB_LOCAL := scripts/dynamodb-local.sh
# staticcheck, pinned; go run fetches it through the Go module proxy into
# the module cache (go.mod does not change).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all dynamodb-local test lint fmt-check test-loaded demo bench chaos sim sim-batch fuzz release-check fmt vet clean

all: test

# Download DynamoDB Local into .cache/dynamodb-local-VERSION (no-op once installed).
dynamodb-local:
	$(DDB_LOCAL) install

# The workspace's modules, read from go.work's use block (the one list of
# them): ./... ./cmd/dynalease/... ./gocronlease/... ./k8s/... ./otel/...
MODULES := $(shell awk '/^use \(/ { u = 1; next } u && /^\)/ { u = 0; next } u && $$1 !~ /^\/\// { print ($$1 == "." ? "./..." : $$1 "/...") } /^use [.]/ { print ($$2 == "." ? "./..." : $$2 "/...") }' go.work)

# make test: gofmt, then every module's tests in one go test over the
# workspace, against one DynamoDB Local, with the whole of go vet
# (-vet=all: every analyzer, on every package, those without tests too).
# Every package is compiled once, with -race: vet and the programs the
# tests build (internal/testkit/testbin) share those compiled packages. -p 4 lets the
# compiler go on while the long, mostly waiting tests (chaos, the
# command's) run. staticcheck is make lint's: on an empty cache it analyses
# every dependency (client-go, controller-runtime) from source, longer than
# all of make test; run make lint before a commit.
#
# What keeps a cold make test short on two CPUs, where compiling and the
# emulator take the time: GOGC=800 (the compiler and the tests collect
# garbage less often; they have the memory), no DWARF (-gcflags=all=-dwarf=false
# -ldflags=-w: nothing here reads it; a panic's or a race report's stack
# comes from the symbol table), and a JVM for DynamoDB Local that compiles
# less (C1 only) and collects garbage on one thread.
TEST_ENV := GOGC=800 GOFLAGS="$$($(GO) env GOFLAGS) -gcflags=all=-dwarf=false -ldflags=-w" \
	DYNAMODB_LOCAL_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
test: fmt-check
	$(TEST_ENV) $(DDB_LOCAL) run -- $(GO) test -race -vet=all -p 4 -count=1 -timeout 20m $(MODULES)
	$(MAKE) --no-print-directory sim-batch SEEDS=500

# make sim: the deterministic simulator (internal/sim, a harness of test files; docs/testing.md),
# SEEDS histories (default 2000) from SEED (default 1), shared among
# SIM_PROCS processes (default the machine's cores), each on one core
# without the race detector; it prints histories per second, and, with
# COVER=1, the table of what the kernel and each kind's port reached, by
# kind. A failing seed prints the command that replays it.
SEEDS ?= 2000
SEED ?= 1
SIM_PROCS ?= $(shell nproc 2>/dev/null || echo 2)
SIM_ENV := GOGC=400 GOMAXPROCS=1
sim:
	SEEDS=$(SEEDS) SEED=$(SEED) SIM_PROCS=$(SIM_PROCS) COVER=$(COVER) GO=$(GO) scripts/sim.sh

# make sim-batch: make sim without the coverage table, for make test.
sim-batch:
	SEEDS=$(SEEDS) SEED=$(SEED) SIM_PROCS=$(SIM_PROCS) COVER= GO=$(GO) scripts/sim.sh

# The suite beside two CPU-bound busy loops: make test five times, then the
# fake-clock unit tests of election and lock 50 times under -race. A test
# that fails only here depends on the machine's speed and is broken.
test-loaded:
	scripts/test-loaded.sh

demo:
	$(DDB_LOCAL) run -- sh -c '$(GO) run ./examples/leader/demo && GO=$(GO) scripts/demo-cli.sh'

# The core's rows, then the k8s module's (client-go's elector against
# dynalease's when renewals hang), then the otel module's (what tracing
# costs an acquire+release, off and on); each prints its table and writes
# its results.json (bench/, k8s/bench/, otel/bench/).
bench:
	$(DDB_LOCAL) run -- sh -c '$(GO) run ./bench && cd k8s && $(GO) run ./bench && cd ../otel && $(GO) run ./bench'

# make chaos: the Jepsen-style check of the guarantees (see chaos/main.go and
# docs/testing.md), CHAOS_MINUTES (default 10) with each of the three duration
# sets (the last with the smallest margins the library accepts, where the
# drift action's ρ is all the margin covers); CHAOS_SEED repeats a run.
# Exits non-zero on any safety violation.
CHAOS_BIN := .cache/chaos/chaos
chaos:
	mkdir -p .cache/chaos
	$(GO) build -o $(CHAOS_BIN) ./chaos
	$(DDB_LOCAL) run -- sh -c '$(CHAOS_BIN) run -lease 2s -renew 1.5s -retry 200ms && $(CHAOS_BIN) run -lease 3s -renew 2s -retry 500ms && $(CHAOS_BIN) run -lease 2s -renew 1.98s -retry 200ms -lock-margin 20ms'

# make release-check VERSION=vX.Y.Z: before tagging, the CHANGELOG's section,
# the siblings' requirement of the core at VERSION without replace, the
# API against the last tag (apidiff), and each sibling tidied, built and
# tested outside the workspace against the core at VERSION from a local
# module proxy (scripts/release-check.sh; RELEASING.md).
release-check:
	$(DDB_LOCAL) run -- env VERSION=$(VERSION) GO=$(GO) scripts/release-check.sh

# make fuzz: every Go fuzz target for FUZZTIME each (default 1m); their
# seed corpora (testdata/fuzz) run in make test as ordinary tests.
fuzz:
	GO=$(GO) scripts/fuzz.sh

# make lint: gofmt, go vet and staticcheck (staticcheck.conf), all clean.
# go vet loads the packages compiled with -race, as make test's; staticcheck
# analyses from source.
lint: fmt-check
	$(GO) vet -race $(MODULES)
	$(GO) run $(STATICCHECK) $(MODULES)

fmt-check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

fmt:
	$(GO) fmt ./...

vet:
	$(GO) vet -race $(MODULES)

clean:
	rm -rf .cache
