#!/bin/bash
# Benchmarks for execd on loopback (issue #2 goals in brackets). Figures are
# printed, not asserted: these machines are noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export EXECD_BIN=$PWD/$BUILD/bin/execd
/usr/bin/python3 bench/execd_bench.py "$@"
# Code contexts per language: create cold / with a warm spare, cell round trip.
/usr/bin/python3 bench/code_bench.py
# opensandbox-server with the host image (issue #3 goals in brackets).
/usr/bin/python3 bench/server_bench.py
# Images from a loopback registry and snapshots (issue #4 goals in brackets).
/usr/bin/python3 bench/image_bench.py
# Sandbox networking: create with nat vs none, policy PATCH, NAT throughput (issue #5 goals in brackets).
/usr/bin/python3 bench/net_bench.py
# The sandbox log pipe under a flood: drain rate, other sandboxes' latency.
/usr/bin/python3 bench/log_bench.py
# pvc claims: the cost of making one (mkfs, loop, mount) and of create/delete with one.
/usr/bin/python3 bench/volume_bench.py
# Secure runtimes (issue #11): create-to-ready for native, native+userns and gVisor beside a bare
# `runsc run`, and the memory of one idle sandbox of each kind.
/usr/bin/python3 bench/secure_bench.py
# Warm pools (issue 12): pooled create-to-ready, serially, raw HTTP.
/usr/bin/python3 bench/pool_bench.py
