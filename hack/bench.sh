#!/usr/bin/env bash
# bench.sh runs hactl's benchmarks against their baselines in the same run
# and prints every metric, ratios first, as a table: bench/ (status, probe
# fan-out, peak RSS, seed capture, TUI frame render) and the TUI's
# end-to-end benchmarks in tui/e2e (the real binary in tmux on a sandbox:
# time to first frame, idle CPU).
#
# BENCH and BENCHTIME select and size the bench/ run (default: all, 3x);
# TUIBENCH selects the tui/e2e ones (default TUI; "none" skips them), which
# run once each (-benchtime 1x): one op already takes several launches or a
# 30 s window. HACTL_BENCH_SEED_MIB sizes the seed database (default 1024).
# go test runs with -v so that a result line always starts with its
# benchmark's name, whatever the benchmark printed while it ran.
# BenchmarkCostCurve's points go to bench/costcurve.csv, which hack/costplot
# (a module of its own) draws as bench/costcurve.png; BenchmarkFleetCurve's
# go to bench/fleetcurve.csv, drawn as bench/fleetcurve.png.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=$(bash hack/testbins.sh)
out=$(mktemp)
curve=$(mktemp)
fleet=$(mktemp)
trap 'rm -f "$out" "$curve" "$fleet"' EXIT
HACTL_BENCH_CURVE_CSV=$curve HACTL_BENCH_FLEET_CSV=$fleet HACTL_TESTBINS_DIR=$BINS go test -v -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-3x}" -timeout 60m ./bench/... | tee "$out" >&2
if [ -s "$curve" ]; then
  cp "$curve" bench/costcurve.csv
  (cd hack/costplot && go run . -in ../../bench/costcurve.csv -out ../../bench/costcurve.png) ||
    echo "bench.sh: the plot was not drawn; bench/costcurve.csv holds the points" >&2
fi
if [ -s "$fleet" ]; then
  cp "$fleet" bench/fleetcurve.csv
  (cd hack/costplot && go run . -curve fleet -in ../../bench/fleetcurve.csv -out ../../bench/fleetcurve.png) ||
    echo "bench.sh: the plot was not drawn; bench/fleetcurve.csv holds the points" >&2
fi
if [ "${TUIBENCH:-TUI}" != none ]; then
  HACTL_TESTBINS_DIR=$BINS go test -v -run '^$' -bench "${TUIBENCH:-TUI}" -benchtime 1x -timeout 30m ./tui/e2e | tee -a "$out" >&2
fi
echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); date: $(date -u +%Y-%m-%d)"
printf '%-42s %-30s %12s\n' BENCHMARK METRIC VALUE
awk '/^Benchmark[^ \t]*[ \t]+[0-9]+[ \t]/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  for (i = 5; i < NF; i += 2) {
    unit=$(i+1); v=$i
    if (unit ~ /ratio/) printf "%-42s %-30s %12s\n", name, unit, v
  }
  for (i = 5; i < NF; i += 2) {
    unit=$(i+1); v=$i
    if (unit !~ /ratio/) printf "%-42s %-30s %12s\n", name, unit, v
  }
}' "$out"
