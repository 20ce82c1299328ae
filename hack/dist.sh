#!/usr/bin/env bash
# dist.sh cross-builds kubectl-hactl release archives into DIST (default
# ./dist) and renders the krew manifest DIST/plugin.yaml with their real
# sha256 sums.
#
# The archives are reproducible: the same source tree and Go version give
# the same bytes (-trimpath, -buildvcs=false, no cgo, fixed tar/zip
# metadata, and no commit or build time in release binaries: the version
# tag names the commit). That is what lets the top-level plugin.yaml be
# committed and checked against a fresh `make dist` (krew/manifest_test.go);
# `make manifest` rewrites it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Time zone, collation and umask change zip times, entry order and modes.
export TZ=UTC LC_ALL=C
umask 022
DIST=${DIST:-dist}
VERSION=${VERSION:-v0.1.0}
COMMIT=${COMMIT:-$VERSION}
DATE=${DATE:-unknown}
URL_BASE=${URL_BASE:-https://github.com/hactl-dev/hactl/releases/download/$VERSION}
PLATFORMS=${PLATFORMS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
PKG=github.com/hactl-dev/hactl/internal/buildinfo
LDFLAGS="-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT -X $PKG.Date=$DATE"
BUILDFLAGS="-trimpath -buildvcs=false -tags grpcnotrace"

rm -rf "$DIST"
mkdir -p "$DIST"
entries=""
for p in $PLATFORMS; do
  os=${p%/*}; arch=${p#*/}
  stage="$DIST/stage-$os-$arch"
  mkdir -p "$stage"
  ext=""; [ "$os" = windows ] && ext=".exe"
  complete=kubectl_complete-hactl; [ "$os" = windows ] && complete=kubectl_complete-hactl.cmd
  echo "dist: building $os/$arch" >&2
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build $BUILDFLAGS -ldflags "$LDFLAGS" -o "$stage/kubectl-hactl$ext" ./cmd/kubectl-hactl
  cp LICENSE README.md "$stage/"
  if [ "$os" = windows ]; then
    printf '@echo off\r\nkubectl-hactl.exe __complete %%*\r\n' >"$stage/kubectl_complete-hactl.cmd"
    archive="kubectl-hactl_${VERSION}_${os}_${arch}.zip"
    # zip keeps each file's time: pin it (zip cannot store 1970).
    find "$stage" -exec touch -h -d 1980-01-01T00:00:00Z {} +
    chmod 0755 "$stage/kubectl-hactl$ext"; chmod 0644 "$stage/LICENSE" "$stage/README.md" "$stage/kubectl_complete-hactl.cmd"
    (cd "$stage" && zip -q -X "../$archive" LICENSE README.md kubectl-hactl.exe kubectl_complete-hactl.cmd)
  else
    cp kubectl_complete-hactl "$stage/"
    archive="kubectl-hactl_${VERSION}_${os}_${arch}.tar.gz"
    tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=u+rw,go=rX,a-s -cf - . | gzip -9 -n >"$DIST/$archive"
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
      - from: $complete
        to: .
      - from: LICENSE
        to: .
"
done
awk -v v="$VERSION" -v p="$entries" '{ gsub("@VERSION@", v); if ($0 == "@PLATFORMS@") { printf "%s", p } else print }' krew/plugin.yaml.tmpl >"$DIST/plugin.yaml"
(cd "$DIST" && sha256sum $(ls ./*.tar.gz ./*.zip 2>/dev/null) >SHA256SUMS)
echo "dist: archives and $DIST/plugin.yaml ready" >&2
