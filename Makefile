# Developer entry points. Everything that needs DynamoDB goes through
# scripts/dynamodb-local.sh, which starts a private DynamoDB Local for the
# duration of one command and always stops it afterwards. To use a server you
# already run instead, set DYNAMODB_ENDPOINT (e.g. http://127.0.0.1:8000).

GO ?= go
DDB_LOCAL := scripts/dynamodb-local.sh
# staticcheck, pinned; go run fetches it through the Go module proxy into
# the module cache (go.mod does not change).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all dynamodb-local test lint test-loaded demo bench chaos fuzz release-check fmt vet clean

all: test

# Download DynamoDB Local into .cache/dynamodb-local-VERSION (no-op once installed).
dynamodb-local:
	$(DDB_LOCAL) install

# make test runs make lint first (go vet and staticcheck, no server needed),
# then every module's tests in one go test over the workspace (go.work):
# the core, k8s (client-go and controller-runtime adapters), gocronlease
# (gocron's Elector and Locker) and otel (the span tests, otelmetrics), so
# that one module's packages build and run while another's wait, against
# one DynamoDB Local. sh -c is not needed: the script passes go test's
# exit status on after stopping the server.
MODULES := ./... ./k8s/... ./gocronlease/... ./otel/...
test: lint
	$(DDB_LOCAL) run -- $(GO) test -race -count=1 -timeout 20m $(MODULES)

# The suite beside two CPU-bound busy loops: make test five times, then the
# fake-clock unit tests of election and lock 50 times under -race. A test
# that fails only here depends on the machine's speed and is broken.
test-loaded:
	scripts/test-loaded.sh

demo:
	$(DDB_LOCAL) run -- sh -c '$(GO) run ./examples/leader/demo && GO=$(GO) scripts/demo-cli.sh'

# The core's rows, then the k8s module's (client-go's elector against
# dynalease's when renewals hang); each prints its table and writes its
# results.json (bench/, k8s/bench/).
bench:
	$(DDB_LOCAL) run -- sh -c '$(GO) run ./bench && cd k8s && $(GO) run ./bench'

# make chaos: the Jepsen-style check of the guarantees (see chaos/main.go and
# the README), CHAOS_MINUTES (default 10) with each of the three duration
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
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt would change:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(MODULES)
	$(GO) run $(STATICCHECK) $(MODULES)

fmt:
	$(GO) fmt ./...

vet:
	$(GO) vet ./...

clean:
	rm -rf .cache
