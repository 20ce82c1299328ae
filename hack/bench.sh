#!/usr/bin/env bash
# bench.sh runs hactl's benchmarks (bench/) against their baselines in the
# same run and prints every metric, ratios first, as a table.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=$(bash hack/testbins.sh)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
HACTL_TESTBINS_DIR=$BINS go test -run '^$' -bench "${BENCH:-.}" -benchtime "${BENCHTIME:-3x}" -timeout 60m ./bench/... | tee "$out" >&2
echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); date: $(date -u +%Y-%m-%d)"
printf '%-42s %-26s %12s\n' BENCHMARK METRIC VALUE
awk '/^Benchmark/ {
  name=$1; sub(/-[0-9]+$/, "", name)
  for (i = 5; i < NF; i += 2) {
    unit=$(i+1); v=$i
    if (unit ~ /ratio/) printf "%-42s %-26s %12s\n", name, unit, v
  }
  for (i = 5; i < NF; i += 2) {
    unit=$(i+1); v=$i
    if (unit !~ /ratio/) printf "%-42s %-26s %12s\n", name, unit, v
  }
}' "$out"
