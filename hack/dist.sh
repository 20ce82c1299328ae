#!/usr/bin/env bash
# dist.sh cross-builds kubectl-hactl release archives into DIST (default
# ./dist) and renders the krew manifest DIST/plugin.yaml with their real
# sha256 sums.
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${DIST:-dist}
VERSION=${VERSION:-v0.1.0}
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DATE=${DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
URL_BASE=${URL_BASE:-https://github.com/hactl-dev/hactl/releases/download/$VERSION}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
PKG=github.com/hactl-dev/hactl/internal/buildinfo
LDFLAGS="-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT -X $PKG.Date=$DATE"

rm -rf "$DIST"
mkdir -p "$DIST"
entries=""
for p in $PLATFORMS; do
  os=${p%/*}; arch=${p#*/}
  stage="$DIST/stage-$os-$arch"
  mkdir -p "$stage"
  ext=""; [ "$os" = windows ] && ext=".exe"
  echo "dist: building $os/$arch" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$LDFLAGS" -o "$stage/kubectl-hactl$ext" ./cmd/kubectl-hactl
  cp LICENSE README.md "$stage/"
  if [ "$os" = windows ]; then
    printf '@echo off\r\nkubectl-hactl.exe __complete %%*\r\n' >"$stage/kubectl_complete-hactl.cmd"
    archive="kubectl-hactl_${VERSION}_${os}_${arch}.zip"
    (cd "$stage" && zip -q -X "../$archive" ./*)
  else
    cp kubectl_complete-hactl "$stage/"
    archive="kubectl-hactl_${VERSION}_${os}_${arch}.tar.gz"
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -czf "$DIST/$archive" .
  fi
  rm -rf "$stage"
  sum=$(sha256sum "$DIST/$archive" | cut -d' ' -f1)
  entries="$entries  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $URL_BASE/$archive
    sha256: \"$sum\"
    bin: kubectl-hactl$ext
    files:
      - from: \"kubectl-hactl$ext\"
        to: \".\"
      - from: LICENSE
        to: .
"
done
awk -v v="$VERSION" -v p="$entries" '{ gsub("@VERSION@", v); if ($0 == "@PLATFORMS@") { printf "%s", p } else print }' krew/plugin.yaml.tmpl >"$DIST/plugin.yaml"
(cd "$DIST" && sha256sum ./*.tar.gz ./*.zip >SHA256SUMS)
echo "dist: archives and $DIST/plugin.yaml ready" >&2
