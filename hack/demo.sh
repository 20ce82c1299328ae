#!/usr/bin/env bash
# demo.sh starts the local sandbox (a real control plane with real etcd
# members: several HA clusters in different states in namespace
# hactl-demo) and opens `kubectl hactl` on it. Leaving it (q or Ctrl-C)
# tears the sandbox down. Extra arguments go to `hactl-sandbox up`
# (e.g. --scenario healthy --scenario seed-rebootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=$(bash hack/testbins.sh)
export PATH="$PWD/bin:$BINS:$PATH"

cleanup() {
  echo "demo: tearing the sandbox down" >&2
  hactl-sandbox down || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$SECONDS
# The agent the sandbox's restore and capture pods run: the binaries
# `make build` just made (bin/hactl-capture beside it), not a second
# build with other flags.
export HACTL_AGENT="$PWD/bin/kubectl-hactl"
KUBECONFIG=$(hactl-sandbox up "$@")
export KUBECONFIG
echo "demo: sandbox up in $((SECONDS - start))s; KUBECONFIG=$KUBECONFIG" >&2
# kubectl finds the plugin on PATH (bin/kubectl-hactl).
kubectl hactl -n hactl-demo || true
