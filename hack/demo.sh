#!/usr/bin/env bash
# demo.sh starts the local sandbox (a real control plane with real etcd
# members, several HA clusters in different states in namespace
# hactl-demo) and opens `kubectl hactl` on it. Ctrl-C tears it all down.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=$(bash hack/testbins.sh)
DIR=${HACTL_SANDBOX_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/hactl/sandbox}
export PATH="$PWD/bin:$BINS:$PATH"

cleanup() {
  echo "demo: tearing the sandbox down" >&2
  hactl-sandbox down --dir "$DIR" || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$SECONDS
hactl-sandbox up --dir "$DIR" "$@"
echo "demo: sandbox up in $((SECONDS - start))s; kubeconfig $DIR/kubeconfig" >&2
export KUBECONFIG="$DIR/kubeconfig"
# kubectl finds the plugin on PATH (bin/kubectl-hactl).
kubectl hactl -n hactl-demo || true
