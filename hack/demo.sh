#!/usr/bin/env bash
# make demo: kernelet's main job on an embedded default — a private
# containerd (with the test images and a registry mirror) and `kernelet run`
# standalone against it, in the foreground, running the example pods of
# deploy/examples, copied to the demo's state dir (BestEffort, Burstable with
# an init container, Guaranteed) under a cgroupRoot named after the run. Ctrl-C stops both and
# removes every trace (pods, containerd, shims, mounts, CNI state, cgroups,
# state dirs).
#
# Once kernelet's read-only port serves the dashboard, it prints its URL.
#
# Environment: BIN (default ./bin), DEMO_PORT (10250, the secure kubelet API), DEMO_READONLY_PORT
# (10255, the read-only port), DEMO_HEALTHZ_PORT (10248).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
PORT=${DEMO_PORT:-10250}
HPORT=${DEMO_HEALTHZ_PORT:-10248}
ROPORT=${DEMO_READONLY_PORT:-10255}
if [ -z "${KERNELET_TEST_RUN:-}" ]; then
  KERNELET_TEST_RUN=kltest$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
fi
export KERNELET_TEST_RUN
# The run's owner lock (test/env/owner_linux.go): while the demo lives,
# `testenv reap` (which make test runs first) leaves its containerd alone;
# children must not inherit it (9>&-), or a leftover would look alive.
rundir="${KERNELET_TEST_STATE:-/run/kltest}/$KERNELET_TEST_RUN"
mkdir -p "$rundir"
ownerlock="$rundir/owner-$$.lock"
exec 9>"$ownerlock"
flock -n 9

kpid=""
root=""
cgroot="/${KERNELET_TEST_RUN}-demo"
# rm_cgroups removes the demo's cgroupRoot in every hierarchy
# (containerd down already killed every process in it).
# shellcheck source=hack/lib/cgroups.sh
. hack/lib/cgroups.sh
rm_cgroups() { rm_cgroup_root "$cgroot" demo; }
# dashboard_up: GET /dashboard/ on the read-only port answers 200 (bash's
# /dev/tcp: the demo needs no HTTP client).
dashboard_up() {
  (
    exec 3<>"/dev/tcp/127.0.0.1/$ROPORT" || exit 1
    printf 'GET /dashboard/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
    IFS= read -r -t 2 line <&3 && [[ "$line" == *" 200 "* ]]
  ) 2>/dev/null 9>&-
}
cleanup() {
  # Ctrl-C reaches every process of the terminal's foreground group: a
  # second INT must not stop the cleanup, nor a broken pipe when the output
  # was piped into a reader (e.g. `make demo | tee`) that Ctrl-C ended.
  trap '' INT TERM PIPE
  trap - EXIT
  if [ -n "$kpid" ] && kill -0 "$kpid" 2>/dev/null; then
    kill -TERM "$kpid" 2>/dev/null || true
    wait "$kpid" 2>/dev/null || true
  fi
  echo "demo: stopping containerd and cleaning up" 2>/dev/null || true
  [ -n "${root:-}" ] && rm -rf "$root"
  # Its output goes to a file first: a write to a broken pipe would end it.
  local log rc=0
  log=$(mktemp)
  "$BIN/testenv" containerd down >"$log" 2>&1 || rc=$?
  cat "$log" 2>/dev/null || true
  rm -f "$log"
  rm_cgroups
  rm -f "$ownerlock"
  exec 9>&-
  rmdir "$rundir" 2>/dev/null || true
  [ "$rc" -eq 0 ] || echo "demo: cleanup failed (exit $rc)" >&2 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: starting a private containerd (run $KERNELET_TEST_RUN)"
eval "$("$BIN/testenv" containerd up --testbox "$BIN/testbox" 9>&-)"
root="$(dirname "$CONTAINERD_STATE")/kernelet"
# The pods come from a copy of deploy/examples in the demo's own state dir:
# manifests dropped there run at once, and the cleanup removes them with it
# (the checkout stays clean).
manifests="$root/manifests"
mkdir -p "$manifests"
cp deploy/examples/*.yaml "$manifests/"
# The demo's own config: pods under a cgroupRoot of this run, logs in its
# state dir (both removed by the cleanup); the kubelet API on loopback,
# standalone (no API server: anonymous requests, everything allowed), and
# the read-only port.
cat >"$root/config.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false  # kubelet's default refuses a host with cgroup v1 hierarchies
cgroupRoot: $cgroot
podLogsDir: $root/logs
address: 127.0.0.1
readOnlyPort: $ROPORT
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
CFG

cat <<MSG
demo: containerd is up at $CONTAINERD_ENDPOINT; starting kernelet. Try, in another terminal:
  curl -s http://127.0.0.1:$HPORT/healthz?verbose
  curl -s http://127.0.0.1:$ROPORT/metrics | grep kernelet_
  $BIN/kernelet status --root-dir $root
  curl -s http://127.0.0.1:$ROPORT/pods
  curl -sk https://127.0.0.1:$PORT/containerLogs/default/<pod>/<container>
Example pods (copied from deploy/examples) run under cgroupRoot $cgroot.
Drop manifests here to run them: $manifests (removed on exit).
Ctrl-C stops kernelet and containerd and cleans up.
MSG
# setsid: Ctrl-C reaches kernelet through this script's trap, in order.
setsid "$BIN/kernelet" run --config "$root/config.yaml" --pod-manifest-path "$manifests" \
  --container-runtime-endpoint "$CONTAINERD_ENDPOINT" --root-dir "$root" \
  --hostname-override demo-node --port "$PORT" --healthz-port "$HPORT" -v 2 9>&- &
kpid=$!
# Once the dashboard answers on the read-only port, say where it is.
dashboard="http://127.0.0.1:$ROPORT/dashboard/"
while kill -0 "$kpid" 2>/dev/null; do
  if dashboard_up; then
    echo "demo: the dashboard is up: $dashboard (open it in a browser on this machine)"
    break
  fi
  sleep 0.5
done
wait "$kpid"
