#!/usr/bin/env bash
# Builds the pinned golangci-lint (hack/lint/go.mod) into a cache dir outside the checkout,
# keyed by version. Idempotent: a cached binary is reused. Prints the binary's path on its
# last line; `--path` prints only the path without building.
#
#   UNIVERSE_CACHE   cache root (default: $HOME/.cache/universe-operator)
set -euo pipefail
cd "$(dirname "$0")/lint"

VERSION=$(sed -n 's|^require github.com/golangci/golangci-lint/v2 \(v[^ ]*\)$|\1|p' go.mod)
[ -n "$VERSION" ] || { echo "[build-lint] no golangci-lint version in hack/lint/go.mod" >&2; exit 1; }
CACHE_ROOT=${UNIVERSE_CACHE:-$HOME/.cache/universe-operator}
BIN="$CACHE_ROOT/tools/golangci-lint-$VERSION-$(go env GOVERSION)/golangci-lint"
if [ "${1:-}" = "--path" ]; then echo "$BIN"; exit 0; fi

if [ ! -x "$BIN" ]; then
  echo "[build-lint] golangci-lint $VERSION: building (a few minutes cold)" >&2
  mkdir -p "$(dirname "$BIN")"
  GOFLAGS= GOWORK=off go build -trimpath -ldflags "-s -w" -o "$BIN.tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  mv "$BIN.tmp" "$BIN"
fi
echo "$BIN"
