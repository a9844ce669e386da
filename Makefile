# toolprof: the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := bin
GOFLAGS := -buildvcs=false
export GOFLAGS

.PHONY: all build test test-go test-e2e e2e-deps vet demo bench eval profiles fuzz load perf clean

all: build

build:
	$(GO) build -o $(BIN)/server ./cmd/server
	$(GO) build -o $(BIN)/profiler ./cmd/profiler
	$(GO) build -o $(BIN)/conformance-client ./e2e/conformance-client
	$(GO) build -o $(BIN)/everything-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server
	$(GO) build -o $(BIN)/relayfloor ./bench/relayfloor

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# make test: vet, the Go suite with the race detector, the end-to-end suite
# with real Node clients (installed from the pinned lockfile), then every
# fuzz target for a short fixed time.
test: vet e2e-deps test-go test-e2e fuzz-short

test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

e2e-deps:
	cd e2e && npm ci --no-audit --no-fund

test-e2e: build e2e-deps
	cd e2e && TOOLPROF_BIN=$(CURDIR)/$(BIN) npm test

clean:
	rm -rf $(BIN)

# make bench: the committed before/after report for the committed
# profiles.generated.toml, priced on demo/catalog.json (the tools of the
# servers in demo/servers.mcp.json, as make demo dumps them) by the gateway's
# own serving code.
bench: build
	$(BIN)/profiler bench --profiles profiles.generated.toml --catalog demo/catalog.json --results --out bench/RESULTS.md
	@cat bench/RESULTS.md

# make eval: figures on the real catalogs and traces in ../shared/data (not
# part of make test: a clone elsewhere has no ../shared). TOOLPROF_DATA
# moves it.
TOOLPROF_DATA ?= $(abspath ../shared/data)
export TOOLPROF_DATA
# profiler evaluate's arms: profiles derived with search priors and groups,
# the search arm over the grouped profile's base tools (lean, the tools
# nearly every session calls) answering up to 9 definitions a search.
EVAL_PROFILES    ?= --profile core=0.8 --profile standard=0.95
EVAL_SEARCH_BASE ?= lean
EVAL_LIMIT       ?= 9
eval: build
	$(GO) test -tags eval -count=1 -timeout 40m -run Eval -v ./derive ./groups ./bench ./evaluate
	$(BIN)/profiler bench --profiles bench/bfcl/profiles.generated.toml --catalog $(TOOLPROF_DATA)/catalogs/bfcl-multi-turn.json --results --out bench/RESULTS-bfcl.md
	@set -e; for d in bfcl-multi-turn tau-airline; do \
		mkdir -p out/eval/$$d; \
		$(BIN)/profiler derive --trace $(TOOLPROF_DATA)/traces/$$d.jsonl --catalog $(TOOLPROF_DATA)/catalogs/$$d.json \
			--out out/eval/$$d/profiles.generated.toml --search --groups --force $(EVAL_PROFILES) > /dev/null; \
		echo "profiler evaluate $$d (search base $(EVAL_SEARCH_BASE), limit $(EVAL_LIMIT))"; \
		$(BIN)/profiler evaluate --profiles out/eval/$$d/profiles.generated.toml --catalog $(TOOLPROF_DATA)/catalogs/$$d.json \
			--trace $(TOOLPROF_DATA)/traces/$$d.jsonl --search-base $(EVAL_SEARCH_BASE) --limit $(EVAL_LIMIT); \
		echo "profiler derive --choose-default $$d"; \
		$(BIN)/profiler derive --trace $(TOOLPROF_DATA)/traces/$$d.jsonl --catalog $(TOOLPROF_DATA)/catalogs/$$d.json \
			--out out/eval/$$d/chosen.generated.toml --search --groups --force $(EVAL_PROFILES) --choose-default 2>/dev/null | sed -n '/^Default arm/,$$p'; \
	done

# make demo: the whole loop offline in about a minute: the gateway on HTTP in
# front of the everything-server, demo/trace.jsonl replayed through it,
# profiles derived, benchmarked and rehearsed. Outputs in out/demo/ (see
# docs/operating.md); the committed profiles.generated.toml is not touched.
demo: build
	BIN=$(BIN) demo/run.sh

# make profiles: the nightly job. Derives $(PROFILES) from the telemetry in
# $(TELEMETRY) against the catalog $(CATALOG) (written by `profiler catalog`)
# and writes the change summary, the pull request's body, to $(SUMMARY).
# DERIVE_FLAGS defaults to --groups (tool groups and the grouped profile,
# as make demo derives them); keep --groups when setting it.
# make profiles-check: exit 1 when $(PROFILES) is not what the telemetry
# gives (for CI).
TELEMETRY ?= telemetry-data
CATALOG   ?= catalog.json
PROFILES  ?= profiles.generated.toml
SUMMARY   ?= out/profiles-summary.md
DERIVE_FLAGS ?= --groups

.PHONY: profiles-check
profiles: build
	@mkdir -p $(dir $(SUMMARY))
	$(BIN)/profiler derive --telemetry $(TELEMETRY) --catalog $(CATALOG) --out $(PROFILES) --summary markdown $(DERIVE_FLAGS) > $(SUMMARY)
	@cat $(SUMMARY)

profiles-check: build
	$(BIN)/profiler derive --telemetry $(TELEMETRY) --catalog $(CATALOG) --out $(PROFILES) --check $(DERIVE_FLAGS)

# make fuzz-short: every fuzz target for FUZZTIME (5s) each, so CI runs them
# all on every change; make fuzz: the same for 2 minutes each. Inputs that
# fail are written under the package's testdata/fuzz/ and then run by go test.
# (go test -fuzz takes one target in one package per run, hence the list.)
# Go 1.26's fuzz coordinator can fail a target with a bare "context
# deadline exceeded" as -fuzztime ends (go.dev/issue/75804): such a run,
# with no failing input written, is run once more; any other failure fails.
FUZZ_TARGETS := ./gateway:FuzzDecodeCursor ./gateway:FuzzToolsCallRequest \
	./profiles:FuzzDecodeFile ./profiles:FuzzDecodePolicy ./launch:FuzzDecode \
	./opcontext:FuzzParse ./telemetry:FuzzDecodeTrace
FUZZTIME ?= 5s

.PHONY: fuzz-short
fuzz-short:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
		for try in 1 2; do \
			if $(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=5s >$$log 2>&1; then cat $$log; break; fi; \
			cat $$log; \
			if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
				echo "fuzz $${t#*:}: the fuzz coordinator's deadline race at -fuzztime (go.dev/issue/75804, fixed in Go 1.27), no failing input written: running it once more"; \
			else exit 1; fi; \
		done; \
	done

fuzz:
	$(MAKE) fuzz-short FUZZTIME=2m

# make load: 200 concurrent HTTP sessions of 50 calls each through the
# in-process gateway (real everything-server, real telemetry); prints p50/p99
# latency and throughput, and checks calls recorded == calls made and no
# goroutine leak. make test runs the same test at 20 x 10 with -race.
# TestLoadIdleFlood holds LOAD_IDLE idle keep-alive connections while one
# session calls, and prints its p50 against its p50 without them. Then the
# batch flood: one session posts a batch of LOAD_FLOOD calls while another
# calls on; it prints that session's p50 against its unloaded p50 (make
# test: 2,000).
LOAD_SESSIONS ?= 200
LOAD_CALLS    ?= 50
LOAD_IDLE     ?= 5000
LOAD_FLOOD    ?= 30000
load:
	TOOLPROF_LOAD_SESSIONS=$(LOAD_SESSIONS) TOOLPROF_LOAD_CALLS=$(LOAD_CALLS) TOOLPROF_LOAD_IDLE=$(LOAD_IDLE) TOOLPROF_LOAD_FLOOD=$(LOAD_FLOOD) $(GO) test ./cmd/server -run '^TestLoad(IdleFlood|BatchFlood)?$$' -count=1 -v

# make perf: the performance table of the built binaries (bench/perf_test.go):
# tools/call p50 and p99 through the gateway against the same client calling
# the everything-server directly, over stdio and HTTP, each at protocol
# 2026-07-28 and 2025-11-25 (every side's client asks for it), in
# interleaved rounds, with the floor (bin/relayfloor: a plain byte relay on
# stdio, an httputil.ReverseProxy on HTTP) in the same rounds, and the CPU
# per call of each process called (its children apart); the server's
# RSS per open idle 2025-11-25 HTTP session (500 held) beside the go-sdk
# server's own; profiler
# import, derive and stats of sessiongen traces (300 tools) at each of
# PERF_SESSIONS, with wall time, peak RSS and the cost per session of the
# largest against the smallest. The 1M run needs about 1 GB of disk in
# $$TMPDIR and minutes on 2 cores.
# PERF_BASE=DIR times DIR/server (another build, with its
# everything-server) in the same rounds, and DIR/profiler's derive and
# stats against this build's on the same telemetry, to compare builds.
# TOOLPROF_PERF_ONLY=analyzer in the environment leaves out the call and
# idle-session rows.
PERF_SESSIONS ?= 100000,1000000
PERF_BASE     ?=
perf: build
	TOOLPROF_PERF=1 TOOLPROF_PERF_SESSIONS=$(PERF_SESSIONS) TOOLPROF_PERF_BASE=$(PERF_BASE) TOOLPROF_BIN=$(CURDIR)/$(BIN) $(GO) test ./bench -run '^TestPerf$$' -count=1 -v -timeout 60m
