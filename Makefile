# Developer entry points. Everything that needs DynamoDB goes through
# scripts/dynamodb-local.sh, which starts a private DynamoDB Local for the
# duration of one command and always stops it afterwards. To use a server you
# already run instead, set DYNAMODB_ENDPOINT (e.g. http://127.0.0.1:8000).

GO ?= go
DDB_LOCAL := scripts/dynamodb-local.sh

.PHONY: all dynamodb-local test test-loaded demo bench fmt vet clean

all: test

# Download DynamoDB Local into .cache/dynamodb-local-VERSION (no-op once installed).
dynamodb-local:
	$(DDB_LOCAL) install

# vet runs inside the same "run" as the tests so that one server start serves
# both; sh -c makes a vet or test failure the command's exit status, which the
# script passes on after stopping the server.
test:
	$(DDB_LOCAL) run -- sh -c '$(GO) vet ./... && $(GO) test -race -count=1 -timeout 20m ./...'

# The suite beside two CPU-bound busy loops: make test five times, then the
# fake-clock unit tests of election and lock 50 times under -race. A test
# that fails only here depends on the machine's speed and is broken.
test-loaded:
	scripts/test-loaded.sh

demo:
	$(DDB_LOCAL) run -- $(GO) run ./examples/leader/demo

bench:
	$(DDB_LOCAL) run -- $(GO) run ./bench

fmt:
	$(GO) fmt ./...

vet:
	$(GO) vet ./...

clean:
	rm -rf .cache
