#!/usr/bin/env bash
# make demo: the whole loop on this machine, no Docker.
#
#   1. builds the control-plane binaries if missing (hack/build-controlplane.sh)
#   2. starts etcd, kube-apiserver, controller-manager, scheduler and a kwok node
#   3. starts a local git server holding the example universe (e2e/testdata/universe)
#   4. starts a development OIDC issuer on loopback (hack/devissuer: a dev sign-in, never
#      part of `operator install`)
#   5. installs the CRDs and runs the operator against them, with the deploy plane's page
#      on 127.0.0.1 only
#   6. prints the drift report, the page's URL and what to try next
#
# Ctrl-C stops everything it started, and nothing else. DEMO_ONESHOT=1 stops after the
# first report (used to check the demo in CI-like runs).
set -euo pipefail
cd "$(dirname "$0")/.."

STATE=${DEMO_DIR:-$PWD/.cache/demo}
PROBE_PORT=${DEMO_PROBE_PORT:-18081}
METRICS_PORT=${DEMO_METRICS_PORT:-18080}
PLANE_PORT=${DEMO_PLANE_PORT:-18090}
PLANE_CLIENT=deploy-demo
BIN_DIR=$(hack/build-controlplane.sh --dir)
KUBECTL="$BIN_DIR/kubectl"
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

pids=()
cleanup() {
  trap - EXIT INT TERM
  say "stopping what the demo started"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -x "$STATE/bin/controlplane" ] && "$STATE/bin/controlplane" down --dir "$STATE/cluster" || true
}
trap cleanup EXIT INT TERM

[ -d "$STATE/cluster/pids" ] && [ -x "$STATE/bin/controlplane" ] && "$STATE/bin/controlplane" down --dir "$STATE/cluster" || true
rm -rf "$STATE"
mkdir -p "$STATE/bin"
say "building operator, control-plane launcher and git server"
go build -tags kustomize_disable_go_plugin_support -o "$STATE/bin/operator" ./cmd/operator
go build -o "$STATE/bin/controlplane" ./hack/controlplane
go build -o "$STATE/bin/gitserver" ./hack/gitserver
go build -o "$STATE/bin/devissuer" ./hack/devissuer

say "starting the control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
export KUBECONFIG
KUBECONFIG=$("$STATE/bin/controlplane" up --dir "$STATE/cluster")

say "starting the git server with the example universe"
mkdir -p "$STATE/git"
"$STATE/bin/gitserver" --seed e2e/testdata/universe --state "$STATE/git" >"$STATE/git/url" 2>"$STATE/gitserver.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$STATE/git/url" ] && break; sleep 0.1; done
REPO=$(cat "$STATE/git/url")

say "starting the development OIDC issuer (loopback only; signs in admin@demo.local of org platform)"
mkdir -p "$STATE/issuer"
"$STATE/bin/devissuer" --client-id "$PLANE_CLIENT" --email admin@demo.local --org platform >"$STATE/issuer/url" 2>"$STATE/issuer.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$STATE/issuer/url" ] && break; sleep 0.1; done
ISSUER=$(cat "$STATE/issuer/url")
PLANE="http://127.0.0.1:$PLANE_PORT"

say "installing the CRDs"
"$STATE/bin/operator" install --crds-only | awk '{n++; a[$2]++} END {printf "  %d CRDs:", n; for (k in a) printf " %s %d", k, a[k]; print ""}'

say "running the operator (log: $STATE/operator.log)"
"$STATE/bin/operator" run --namespace demo --leader-elect=false \
  --git-url "$REPO" --git-username git --gitops-token-file "$STATE/git/password" \
  --gitops-namespaces demo --gitops-resync 15s --gitops-webhook-insecure \
  --webhook-bind-address "127.0.0.1:$PROBE_PORT" --health-probe-bind-address "127.0.0.1:$((PROBE_PORT + 1))" \
  --metrics-bind-address "127.0.0.1:$METRICS_PORT" --log-format console \
  --deploy-plane-bind-address "127.0.0.1:$PLANE_PORT" --deploy-plane-public-url "$PLANE" \
  --deploy-plane-oidc-issuer "$ISSUER" --deploy-plane-oidc-audience "$PLANE_CLIENT" --deploy-plane-oidc-client-id "$PLANE_CLIENT" \
  --deploy-plane-admin-org platform \
  >"$STATE/operator.log" 2>&1 &
pids+=($!)

report() {
  curl -fsS "127.0.0.1:$PROBE_PORT/gitops" | python3 -c '
import json, sys
r = json.load(sys.stdin)
for x in r.get("results", []):
    o = x["object"]
    ref = "/".join(p for p in (o["kind"], o.get("namespace", ""), o["name"]) if p)
    by = " (changed by " + ", ".join(x["driftedBy"]) + ")" if x.get("driftedBy") else ""
    print("  {:8} {}{} {}".format(x["action"], ref, by, x.get("message", "")))
s = r.get("summary", {})
print("  summary: " + ", ".join(f"{k}={v}" for k, v in s.items()))
print("  revision:", r.get("revision", ""))'
}
for _ in $(seq 150); do curl -fsS "127.0.0.1:$PROBE_PORT/gitops" 2>/dev/null | grep -q revision && break; sleep 0.2; done
say "drift report of the first sweep (GET 127.0.0.1:$PROBE_PORT/gitops)"
report
sleep 12
say "the universe, 12 s later"
"$KUBECTL" get universe -n demo
"$KUBECTL" get deploy,statefulset,svc,ingress -n demo

say "the deploy plane's page (dev sign-in as admin@demo.local)"
echo "  $PLANE/v1/deploy/auth/login?return_url=/v1/deploy/ui/"
curl -fsS -o /dev/null -w '  GET /v1/deploy/ui/: %{http_code}\n' "$PLANE/v1/deploy/ui/"

if [ "${DEMO_ONESHOT:-}" = 1 ]; then exit 0; fi

host=$(echo "$REPO" | sed -E 's#https?://([^/]+)/.*#\1#')
printf 'http://git:%s@%s\n' "$(cat "$STATE/git/password")" "$host" >"$STATE/git/credentials"
git -c credential.helper="store --file=$STATE/git/credentials" clone -q -b main "$REPO" "$STATE/universe"
git -C "$STATE/universe" config credential.helper "store --file=$STATE/git/credentials"

cat <<EOF

Open the page (a dev sign-in, no password; loopback only):
  $PLANE/v1/deploy/auth/login?return_url=/v1/deploy/ui/

Try it (in another terminal), with the page open:
  export KUBECONFIG=$KUBECONFIG PATH=$BIN_DIR:\$PATH
  cd $STATE/universe
  sed -i 's/tag: v1.2.3/tag: v1.2.4/' apps/web.yaml    # a release
  git commit -am "web v1.2.4" && git push
  curl -XPOST 127.0.0.1:$PROBE_PORT/reconcile           # the push webhook; the resync (15 s) catches it anyway
      # the page follows live: web goes Progressing, then Healthy on v1.2.4 (no reload)
      # web -> Diff: desired vs live; History: v1.2.3 has a Rollback button
  kubectl -n demo scale deploy web --replicas=5         # drift: reverted, and the log names kubectl
      # in the page: web -> History -> Rollback (v1.2.3) -> Confirm: the plane commits to git
  git pull -q && git log -1 --format='%h %s%n%b'        # "rollback Service demo/web to ghcr.io/hanzoai/example:v1.2.3"
      # the sweep applies that commit; the page shows web Healthy on v1.2.3
  curl -s 127.0.0.1:$PROBE_PORT/gitops | python3 -m json.tool
  kubectl get universe -n demo -w

Following the operator's drift lines; Ctrl-C stops everything.
EOF
tail -n 0 -f "$STATE/operator.log" | grep --line-buffered -E '"msg":"(Reverted drift|Created object|Updated object|Applied child|Updated child|Deleted child|Apply failed|Apply denied|Sweep complete)' &
pids+=($!)
wait "${pids[1]}"
