#!/usr/bin/env bash
# demo/run.sh: the whole toolprof loop on this machine, offline, in under a
# minute. Called by `make demo` after `make build`; see docs/operating.md.
#
# The upstreams (demo/servers.mcp.json): the npm filesystem server over a
# copy of demo/workspace, the npm memory server, and the go-sdk conformance
# everything-server. The npm servers are the ones e2e/package-lock.json
# pins; they are installed (npm ci, the only step that needs the network)
# when e2e/node_modules lacks them.
#
#   1. dump the upstreams' tools/list catalog (profiler catalog)
#   2. start the gateway over streamable HTTP on a free loopback port in
#      front of them, with no profiles yet (every session sees every tool,
#      as on day one) and a fresh telemetry directory
#   3. replay demo/trace.jsonl through it (profiler replay), one real MCP
#      session per line, with the calls' recorded arguments
#   4. stop the gateway with SIGTERM (telemetry is flushed on the way out)
#   5. profiler stats, profiler derive (profiles, summary, frontier plot),
#      profiler bench (token cost of each profile's initialize + tools/list)
#   6. rehearse the derived profiles: profiler check, then a second replay
#      against the gateway serving them (refused calls are counted as denied)
#
# Outputs, all under $DEMO_OUT (default out/demo):
#   catalog.json               the upstream's tools/list result
#   telemetry/                 the recorded sessions (bbolt segments)
#   profiles.generated.toml    the derived profiles (core, standard, full) and tool
#                              groups with the grouped profile offering them (--groups)
#   profiles.toml              copy of profiles.toml (the repository's), the people's decisions
#   workspace/, memory.jsonl   what the filesystem and memory servers work on
#   summary.md                 derive's change summary (the PR body)
#   groups.json                derive's tool-groups report (held-out figures)
#   frontier.png               cost / coverage frontier, profiles marked
#   report.md                  profiler bench --format markdown
#   replay.json, rehearsal.json  the two replays' outcomes
set -euo pipefail

cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${DEMO_OUT:-out/demo}
TRACE=${DEMO_TRACE:-demo/trace.jsonl}
LAUNCH=demo/servers.mcp.json
NODE_BIN=${DEMO_NODE_BIN:-e2e/node_modules/.bin}
# One session at a time: telemetry then holds the sessions in trace order,
# so derive's time split (and so the derived profiles) is the same on every
# run. Over HTTP the 160 sessions take about 2 s this way.
CONCURRENCY=${DEMO_CONCURRENCY:-1}

for b in server profiler everything-server; do
	[[ -x "$BIN/$b" ]] || { echo "demo: $BIN/$b missing: run make build (or make demo)" >&2; exit 1; }
done

if [[ ! -x "$NODE_BIN/mcp-server-filesystem" || ! -x "$NODE_BIN/mcp-server-memory" ]]; then
	echo "demo: installing the pinned npm MCP servers (npm ci in e2e/)" >&2
	(cd e2e && npm ci --no-audit --no-fund) >&2
fi

rm -rf "$OUT"
mkdir -p "$OUT"
cp -R demo/workspace "$OUT/workspace"
# The launch document's variables: absolute, since each server may run in
# a directory of its own.
export TOOLPROF_DEMO_BIN TOOLPROF_DEMO_NODE_BIN TOOLPROF_DEMO_WORKSPACE TOOLPROF_DEMO_MEMORY
TOOLPROF_DEMO_BIN=$(cd "$BIN" && pwd)
TOOLPROF_DEMO_NODE_BIN=$(cd "$NODE_BIN" && pwd)
TOOLPROF_DEMO_WORKSPACE=$(cd "$OUT/workspace" && pwd)
TOOLPROF_DEMO_MEMORY=$(cd "$OUT" && pwd)/memory.jsonl

server_pid=""
stop_server() {
	if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid"
		wait "$server_pid" || { echo "demo: gateway exited with status $? on SIGTERM; its log: $1" >&2; return 1; }
	fi
	server_pid=""
}
trap 'stop_server /dev/null || true' EXIT
trap 'exit 130' INT TERM

# start_server LOG DIR ARGS...: starts the gateway in DIR on a free
# loopback port and sets $endpoint from the address it prints.
start_server() {
	local log=$1 dir=$2
	shift 2
	(cd "$dir" && exec "$TOOLPROF_DEMO_BIN/server" --http 127.0.0.1:0 "$@") 2>"$log" &
	server_pid=$!
	endpoint=""
	for _ in $(seq 1 300); do
		endpoint=$(sed -n 's|.* on \(http://127\.0\.0\.1:[0-9]*/mcp\)$|\1|p' "$log" | head -n 1)
		[[ -n "$endpoint" ]] && return 0
		kill -0 "$server_pid" 2>/dev/null || { echo "demo: gateway failed to start:" >&2; cat "$log" >&2; exit 1; }
		sleep 0.1
	done
	echo "demo: gateway printed no address within 30 s; its log:" >&2
	cat "$log" >&2
	exit 1
}

# wait_serving: waits until the gateway at $endpoint serves every upstream
# (health "serving") with the catalog's tools: upstreams connect in the
# background, so a slow one may join after the gateway has started.
wait_serving() {
	local health=${endpoint%/mcp}/healthz want got
	want=$(grep -c '^  {$' "$OUT/catalog.json" || true)
	for _ in $(seq 1 300); do
		got=$(curl -fsS "$health" 2>/dev/null | grep -o '"upstream":{"state":"serving","tools":[0-9]*' | grep -o '[0-9]*$' || true)
		[[ -n "$got" && "$got" -ge "$want" ]] && return 0
		sleep 0.1
	done
	echo "demo: the gateway did not serve the catalog's $want tools within 30 s; health:" >&2
	curl -sS "$health" >&2 || true
	exit 1
}

step() { printf '\n== %s\n' "$*" >&2; }

step "catalog of the upstreams in $LAUNCH"
"$BIN/profiler" catalog --launch "$LAUNCH" --out "$OUT/catalog.json"

step "gateway on HTTP, no profiles yet: every session sees every tool"
# No profiles file is named, and $OUT (the gateway's working directory)
# holds none yet: the gateway serves every tool as profile "full", so the
# telemetry shows the demand for every tool. (A named file must exist.)
OUT_ABS=$(cd "$OUT" && pwd)
LAUNCH_ABS=$(pwd)/$LAUNCH
start_server "$OUT/server.log" "$OUT_ABS" --telemetry "$OUT_ABS/telemetry" --launch "$LAUNCH_ABS"
wait_serving
echo "gateway at $endpoint (pid $server_pid)" >&2

step "replay $TRACE through the gateway"
"$BIN/profiler" replay --trace "$TRACE" --url "$endpoint" --concurrency "$CONCURRENCY" | tee "$OUT/replay.txt"

step "stop the gateway (SIGTERM: telemetry flushed)"
stop_server "$OUT/server.log"

step "profiler stats"
"$BIN/profiler" stats --telemetry "$OUT/telemetry"

step "profiler derive: profiles from the measured sessions"
# The hand-written decisions sit beside the generated file, where derive,
# the gateway, bench and check read them.
cp profiles.toml "$OUT/profiles.toml"
"$BIN/profiler" derive --telemetry "$OUT/telemetry" --catalog "$OUT/catalog.json" \
	--out "$OUT/profiles.generated.toml" --plot "$OUT/frontier.png" --summary markdown \
	--groups --groups-report "$OUT/groups.json" >"$OUT/summary.md"
cat "$OUT/summary.md"

step "profiler bench: tokens of each profile's initialize + tools/list exchange"
"$BIN/profiler" bench --profiles "$OUT/profiles.generated.toml" --catalog "$OUT/catalog.json" --format markdown >"$OUT/report.md"

step "rehearsal: which trace sessions the derived default profile would refuse (no server)"
"$BIN/profiler" check --profiles "$OUT/profiles.generated.toml" --catalog "$OUT/catalog.json" --trace "$TRACE" --refused-only | tee "$OUT/check.txt"

step "rehearsal: the same trace replayed against the gateway serving the derived profiles"
start_server "$OUT/rehearsal-server.log" . --profiles "$OUT/profiles.generated.toml" --telemetry "$OUT/rehearsal-telemetry" --launch "$LAUNCH"
wait_serving
"$BIN/profiler" replay --trace "$TRACE" --url "$endpoint" --concurrency "$CONCURRENCY" | tee "$OUT/rehearsal.txt"
stop_server "$OUT/rehearsal-server.log"

step "report ($OUT/report.md)"
cat "$OUT/report.md"
cat >&2 <<DONE

demo: done. Outputs in $OUT/:
  profiles.generated.toml  derived profiles (serve them: $BIN/server --profiles $OUT/profiles.generated.toml --launch $LAUNCH)
  report.md                token cost per profile (profiler bench)
  summary.md               what derive changed (the nightly PR body)
  frontier.png             cost / coverage frontier with the profiles marked
  telemetry/               the recorded sessions; catalog.json the upstream's tools
DONE
