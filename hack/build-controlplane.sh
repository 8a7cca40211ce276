#!/usr/bin/env bash
# Builds the binaries of a real local control plane from the Go module proxy into a cache dir
# outside the checkout, keyed by version:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok
# Idempotent: a binary already in the cache is skipped. Prints the cache dir on its last line;
# `--dir` prints only the dir.
#
#   UNIVERSE_CACHE   cache root (default: $HOME/.cache/universe-operator)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.36.3}
STAGING_VERSION=${STAGING_VERSION:-v0.36.3}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}

CACHE_ROOT=${UNIVERSE_CACHE:-$HOME/.cache/universe-operator}
BIN_DIR="$CACHE_ROOT/controlplane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
WORK="$CACHE_ROOT/build"
if [ "${1:-}" = "--dir" ]; then echo "$BIN_DIR"; exit 0; fi
mkdir -p "$BIN_DIR" "$WORK"
# One build at a time per cache: two concurrent runs share $WORK and the *.tmp outputs (one
# would move the other's half-written binary). The second waits, then finds the cache full.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE_ROOT/build.lock"
  flock 9
fi

log() { printf '[build-controlplane] %s\n' "$*" >&2; }
have() { [ -x "$BIN_DIR/$1" ]; }

export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0

build_etcd() {
  have etcd && { log "etcd $ETCD_VERSION: cached"; return; }
  log "etcd $ETCD_VERSION: building"
  local d="$WORK/etcd-$ETCD_VERSION"; mkdir -p "$d"
  ( cd "$d"
    [ -f go.mod ] || go mod init wrapper.local/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1
    go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/etcd.tmp" go.etcd.io/etcd/server/v3 )
  mv "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
}

k8s_wrapper() {
  local d="$WORK/kubernetes-$K8S_VERSION"; mkdir -p "$d"
  if [ ! -f "$d/.ready" ]; then
    local gomod
    gomod=$(cd "$d" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      echo "module wrapper.local/kubernetes"
      echo
      echo "go 1.26"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      # every staging module k8s.io/kubernetes requires at v0.0.0 is pinned to the staging tag
      grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk -v v="$STAGING_VERSION" '{print "\t" $1 " => " $1 " " v}'
      echo ")"
    } > "$d/go.mod"
    echo 'package tools' > "$d/tools.go"
    ( cd "$d" && go mod tidy >/dev/null 2>&1 || true
      go get "k8s.io/kubernetes@$K8S_VERSION" >/dev/null 2>&1 )
    touch "$d/.ready"
  fi
  echo "$d"
}

build_k8s() {
  local name=$1 pkg=$2
  have "$name" && { log "$name $K8S_VERSION: cached"; return; }
  log "$name $K8S_VERSION: building (the apiserver takes several minutes cold)"
  local d; d=$(k8s_wrapper)
  local vpkg=k8s.io/component-base/version
  local ld="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${K8S_VERSION#v1.} -X $vpkg.gitTreeState=clean"
  ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  ( cd "$d" && go build -trimpath -ldflags "$ld" -o "$BIN_DIR/$name.tmp" "$pkg" )
  mv "$BIN_DIR/$name.tmp" "$BIN_DIR/$name"
}

build_kwok() {
  have kwok && { log "kwok $KWOK_VERSION: cached"; return; }
  log "kwok $KWOK_VERSION: building"
  GOBIN="$BIN_DIR/.gobin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$BIN_DIR/.gobin/kwok" "$BIN_DIR/kwok"
  # the default Stages ship in the module; keep a copy beside the binary
  local dir; dir=$(cd "$WORK" && GOFLAGS= go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$BIN_DIR/kwok-stages"
  cp -r "$dir/kustomize/stage/." "$BIN_DIR/kwok-stages/"
  chmod -R u+w "$BIN_DIR/kwok-stages"
}

want=${*:-etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok}
for w in $want; do
  case $w in
    etcd) build_etcd ;;
    kube-apiserver) build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ;;
    kube-controller-manager) build_k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager ;;
    kube-scheduler) build_k8s kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler ;;
    kubectl) build_k8s kubectl k8s.io/kubernetes/cmd/kubectl ;;
    kwok) build_kwok ;;
    *) log "unknown binary $w"; exit 2 ;;
  esac
done
log "done"
echo "$BIN_DIR"
