#!/bin/bash
# Benchmarks for execd on loopback (issue #2 goals in brackets). Figures are
# printed, not asserted: these machines are noisy.
#
# run.sh [--quick] [execd_bench.py args]: --quick shrinks create_bench.py's N.
# OSB_BENCH="create secure ..." runs only the named benches (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export EXECD_BIN=$PWD/$BUILD/bin/execd
quick=()
if [ "${1:-}" = --quick ]; then
    quick=(--quick)
    shift
fi
want() { [ -z "${OSB_BENCH:-}" ] || [[ " $OSB_BENCH " == *" $1 "* ]]; }
want execd && /usr/bin/python3 bench/execd_bench.py "$@"
# Code contexts per language: create cold / with a warm spare, cell round trip.
want code && /usr/bin/python3 bench/code_bench.py
# opensandbox-server with the host image (issue #3 goals in brackets).
want server && /usr/bin/python3 bench/server_bench.py
# Images from a loopback registry and snapshots (issue #4 goals in brackets).
want image && /usr/bin/python3 bench/image_bench.py
# Sandbox networking: create with nat vs none, policy PATCH, NAT throughput (issue #5 goals in brackets).
want net && /usr/bin/python3 bench/net_bench.py
# The sandbox log pipe under a flood: drain rate, other sandboxes' latency.
want log && /usr/bin/python3 bench/log_bench.py
# pvc claims: the cost of making one (mkfs, loop, mount) and of create/delete with one.
want volume && /usr/bin/python3 bench/volume_bench.py
# Secure runtimes (issue #11): create-to-ready for native, native+userns and gVisor beside a bare
# `runsc run`, and the memory of one idle sandbox of each kind.
want secure && /usr/bin/python3 bench/secure_bench.py
# Create/delete p50 with 10 and 1000 idle sandboxes alive, and the nft table's object count (issue #12).
want nft && /usr/bin/python3 bench/nft_bench.py
# Issue 14: the credential vault proxy: added latency (kept-alive, new connection) and throughput.
want vault && /usr/bin/python3 bench/vault_bench.py
# Concurrent creates against [server] max_concurrent_creates (issue #12): first ready, p50, wall,
# CPU per create and the server's phase split, per limit and network mode.
want admission && /usr/bin/python3 bench/admission_bench.py
# Issue 12: create-to-ready the way the SDKs measure it (serial, 10..100 at once, with a pool),
# the JS SDK, execd through an endpoint, density, and the peers (bwrap, crun, runc, runsc,
# docker run --rm) in interleaved rounds: one table, and JSON in $BUILD/bench/create.json.
want create && /usr/bin/python3 bench/create_bench.py "${quick[@]}" --json "$BUILD/bench/create.json"
# Warm pools (issue 12): pooled create-to-ready, serially, raw HTTP.
want pool && /usr/bin/python3 bench/pool_bench.py
# Native clients (issue 13): osb process start to exit, osb create beside the raw API, MCP round trip.
want client && /usr/bin/python3 bench/client_bench.py
# Issue 15: the cost of metrics, access logs and the OpenTelemetry export.
want ops && /usr/bin/python3 bench/ops_bench.py
# Issue 16: create to a CDP page load and to the first desktop screenshot, screenshot round
# trip of a 1280x800 desktop, idle memory of a headless browser and of a desktop.
want browser && /usr/bin/python3 bench/browser_bench.py
exit 0
