#!/usr/bin/env bash
# testbins.sh builds, from source through the Go module proxy, the pinned
# binaries that hactl's tests, sandbox and CI run against:
#   etcd, etcdctl, etcdutl           (etcd $ETCD_VERSION)
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (k8s $K8S_VERSION)
#   kwok                             ($KWOK_VERSION, plus its CRDs and stages)
#   versitygw                        ($VERSITYGW_VERSION, S3-compatible store)
#   kubectl-krew, validate-krew-manifest (krew $KREW_VERSION)
#   prometheus, promtool             (Prometheus $PROMETHEUS_VERSION, the
#                                     module's v0.3xx.y for release 3.xx.y;
#                                     without the optional service
#                                     discoveries: static targets only)
#   azurite-blob                     (Azurite $AZURITE_VERSION, the Azure Blob
#                                     emulator, from npm: hack/azurite/)
# into ~/.cache/hactl/bin/<versions>/ and prints that directory on stdout.
# Azurite is a Node.js program: npm installs it (exactly the versions of
# hack/azurite/package-lock.json, integrity-checked) into
# ~/.cache/hactl/azurite-<version>/, and azurite-blob in the directory is
# a link to it; running it needs node (>= 20) on PATH.
# It is idempotent (each component has a completion marker), safe to run
# twice at once (flock), prints progress on stderr and fails loudly.
set -euo pipefail

ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
K8S_VERSION=${K8S_VERSION:-v1.37.2}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
KREW_VERSION=${KREW_VERSION:-v0.5.0}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
# 3.35.0 is the last Azurite release that runs on Node 20.
AZURITE_VERSION=3.35.0

CACHE=${HACTL_CACHE:-$HOME/.cache/hactl}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION-vgw-$VERSITYGW_VERSION-krew-$KREW_VERSION"
# Bump when the set of components changes: existing caches then build only
# what they lack (each component keeps its own marker).
RECIPE=4
COMPLETE="$BIN/.complete-$RECIPE"
SRC="$CACHE/src"
mkdir -p "$BIN" "$SRC"

log() { printf 'testbins: %s\n' "$*" >&2; }
die() { printf 'testbins: FAILED: %s\n' "$*" >&2; exit 1; }

if [ -f "$COMPLETE" ]; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || die "go is not on PATH"
command -v flock >/dev/null || die "flock (util-linux) is not on PATH"

exec 9>"$CACHE/testbins.lock"
if ! flock -n 9; then
  log "another build holds $CACHE/testbins.lock; waiting for it"
  flock 9
fi
if [ -f "$COMPLETE" ]; then
  echo "$BIN"
  exit 0
fi

# Identical flags on every build keep Go's build cache valid between runs.
export GOFLAGS="-buildvcs=false -trimpath"
export CGO_ENABLED=0

step() { # name marker-file command...
  local name=$1 marker="$BIN/.done-$1"; shift
  if [ -f "$marker" ]; then log "$name: already built"; return; fi
  local start=$SECONDS
  log "$name: building (this is a one-time cost)"
  "$@" || die "$name: build failed (see the output above)"
  touch "$marker"
  log "$name: done in $((SECONDS - start))s"
}

build_etcd() {
  local d="$SRC/etcd-$ETCD_VERSION"
  mkdir -p "$d"
  cat >"$d/go.mod" <<MOD
module hactl.dev/testbins/etcd

go 1.26

require (
	go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/etcdctl/v3 $ETCD_VERSION
	go.etcd.io/etcd/etcdutl/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/server/v3 $ETCD_VERSION
)
MOD
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
GO
  (cd "$d" && go mod tidy &&
    go build -o "$BIN/etcd" go.etcd.io/etcd/server/v3 &&
    go build -o "$BIN/etcdctl" go.etcd.io/etcd/etcdctl/v3 &&
    go build -o "$BIN/etcdutl" go.etcd.io/etcd/etcdutl/v3)
}

build_k8s() {
  local d="$SRC/k8s-$K8S_VERSION" minor
  mkdir -p "$d"
  local info
  info=$(cd "$d" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S_VERSION") || return 1
  local gomod
  gomod=$(printf '%s' "$info" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$gomod" ] || { log "no go.mod for k8s.io/kubernetes@$K8S_VERSION"; return 1; }
  local staging="v0.${K8S_VERSION#v1.}"
  {
    echo "module hactl.dev/testbins/k8s"
    echo
    grep -E '^go [0-9]' "$gomod"
    grep -E '^godebug ' "$gomod" || true
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
    echo ")"
  } >"$d/go.mod"
  cat >"$d/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$d" && go mod tidy &&
    go build -ldflags="-s -w $ld" -o "$BIN/" \
      k8s.io/kubernetes/cmd/kube-apiserver \
      k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler \
      k8s.io/kubernetes/cmd/kubectl)
}

build_kwok() {
  GOBIN="$BIN" go install -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" || return 1
  local dir
  dir=$(GOFLAGS= go list -m -json "sigs.k8s.io/kwok@$KWOK_VERSION" 2>/dev/null | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$dir" ] || dir=$(GOFLAGS= go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$dir/kustomize" ] || { log "kwok module has no kustomize/ dir at $dir"; return 1; }
  rm -rf "$BIN/kwok-manifests"
  mkdir -p "$BIN/kwok-manifests"
  cp -r "$dir/kustomize/crd" "$dir/kustomize/stage" "$BIN/kwok-manifests/"
  chmod -R u+w "$BIN/kwok-manifests"
}

build_versitygw() {
  GOBIN="$BIN" go install -ldflags="-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
}

build_krew() {
  GOBIN="$BIN" go install -ldflags="-s -w" "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION" || return 1
  # The validator installs every platform with `kubectl krew install`.
  local d="$SRC/krew-$KREW_VERSION"
  mkdir -p "$d"
  GOBIN="$d" go install -ldflags="-s -w" "sigs.k8s.io/krew/cmd/krew@$KREW_VERSION" || return 1
  mv "$d/krew" "$BIN/kubectl-krew"
}

build_prometheus() {
  # remove_all_sd: Prometheus' own build tag that leaves out the cloud
  # service discoveries (and their SDKs); the e2e scrape is static.
  GOBIN="$BIN" go install -tags remove_all_sd -ldflags="-s -w" \
    "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
}

build_azurite() {
  command -v npm >/dev/null || { log "npm is not on PATH (Azurite is installed from npm; Debian: apt-get install nodejs npm)"; return 1; }
  command -v node >/dev/null || { log "node is not on PATH"; return 1; }
  local lock="$ROOT/hack/azurite/package-lock.json"
  grep -q "\"azurite\": \"$AZURITE_VERSION\"" "$ROOT/hack/azurite/package.json" ||
    { log "hack/azurite/package.json does not pin azurite $AZURITE_VERSION"; return 1; }
  local d="$CACHE/azurite-$AZURITE_VERSION"
  rm -rf "$d"
  mkdir -p "$d"
  cp "$ROOT/hack/azurite/package.json" "$lock" "$d/"
  (cd "$d" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2) || return 1
  [ -x "$d/node_modules/.bin/azurite-blob" ] || { log "npm installed no azurite-blob in $d"; return 1; }
  "$d/node_modules/.bin/azurite-blob" --version >/dev/null || { log "azurite-blob does not run (node too old?)"; return 1; }
  ln -sfn "$d/node_modules/.bin/azurite-blob" "$BIN/azurite-blob"
}

total=$SECONDS
step etcd build_etcd
step krew2 build_krew
step kwok build_kwok
step versitygw build_versitygw
step k8s build_k8s
step "prometheus-$PROMETHEUS_VERSION" build_prometheus
step "azurite-$AZURITE_VERSION" build_azurite
touch "$COMPLETE"
log "all test binaries ready in $BIN ($((SECONDS - total))s)"
echo "$BIN"
