#!/usr/bin/env bash
# Builds Flux's source-controller and kustomize-controller from the Go module proxy into a cache
# dir outside the checkout, keyed by version, for `make bench` (never for `make test`):
#   source-controller, kustomize-controller, and their CRDs (config/crd/bases) beside them.
# v1.9.6 is the newest pair that builds with Go 1.26. The module zips lack the nested `api`
# module, so the module source is copied, its `replace …/api => ./api` dropped and the published
# `…/api` required instead; github.com/fluxcd/pkg/artifact v0.18.3 (source-controller's pin) is
# not served by the proxy, v0.18.0 compiles unchanged.
# Idempotent: a binary already in the cache is skipped. Prints the cache dir on its last line;
# `--dir` prints only the dir. The compile runs under `nice` (NICE, default 10).
#
#   UNIVERSE_CACHE   cache root (default: $HOME/.cache/universe-operator)
set -euo pipefail

FLUX_VERSION=${FLUX_VERSION:-v1.9.6}
ARTIFACT_VERSION=${ARTIFACT_VERSION:-v0.18.0}
NICE=${NICE:-10}

CACHE_ROOT=${UNIVERSE_CACHE:-$HOME/.cache/universe-operator}
BIN_DIR="$CACHE_ROOT/flux/$FLUX_VERSION"
WORK="$CACHE_ROOT/build/flux-$FLUX_VERSION"
if [ "${1:-}" = "--dir" ]; then echo "$BIN_DIR"; exit 0; fi
mkdir -p "$BIN_DIR" "$WORK"

log() { printf '[build-flux] %s\n' "$*" >&2; }

export CGO_ENABLED=0
export GOTOOLCHAIN=local
export GOFLAGS="-mod=mod -buildvcs=false"

build_controller() {
  local name=$1
  local mod=github.com/fluxcd/$name
  if [ -x "$BIN_DIR/$name" ] && [ -d "$BIN_DIR/crds/$name" ]; then log "$name $FLUX_VERSION: cached"; return; fi
  log "$name $FLUX_VERSION: building"
  local src
  src=$(cd "$WORK" && GOFLAGS= go mod download -json "$mod@$FLUX_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$src" ] || { log "$mod@$FLUX_VERSION: not served"; exit 1; }
  local d="$WORK/$name"
  if [ ! -f "$d/.ready" ]; then
    rm -rf "$d"; cp -r "$src" "$d"; chmod -R u+w "$d"
    ( cd "$d"
      go mod edit -dropreplace "$mod/api" -require "$mod/api@$FLUX_VERSION"
      if grep -q 'github.com/fluxcd/pkg/artifact ' go.mod; then
        go mod edit -require "github.com/fluxcd/pkg/artifact@$ARTIFACT_VERSION"
      fi
      GOFLAGS= go mod download "$mod/api@$FLUX_VERSION" )
    touch "$d/.ready"
  fi
  ( cd "$d" && nice -n "$NICE" go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/$name.tmp" . )
  mv "$BIN_DIR/$name.tmp" "$BIN_DIR/$name"
  # the CRDs ship in the module under config/crd/bases
  rm -rf "$BIN_DIR/crds/$name"; mkdir -p "$BIN_DIR/crds/$name"
  cp "$d"/config/crd/bases/*.yaml "$BIN_DIR/crds/$name/"
}

want=${*:-source-controller kustomize-controller}
for w in $want; do
  case $w in
    source-controller|kustomize-controller) build_controller "$w" ;;
    *) log "unknown binary $w"; exit 2 ;;
  esac
done
log "done"
echo "$BIN_DIR"
