# toolprof: the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := bin
GOFLAGS := -buildvcs=false
export GOFLAGS

.PHONY: all build test test-go test-e2e e2e-deps vet demo bench eval profiles fuzz load clean

all: build

build:
	$(GO) build -o $(BIN)/server ./cmd/server
	$(GO) build -o $(BIN)/profiler ./cmd/profiler
	$(GO) build -o $(BIN)/everything-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# make test: vet, the Go suite with the race detector, then the end-to-end
# suite with real Node clients (installed from the pinned lockfile).
test: vet e2e-deps test-go test-e2e

test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

e2e-deps:
	cd e2e && npm ci --no-audit --no-fund

test-e2e: build e2e-deps
	cd e2e && TOOLPROF_BIN=$(CURDIR)/$(BIN) npm test

clean:
	rm -rf $(BIN)
