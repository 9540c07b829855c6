#!/usr/bin/env bash
# hack/e2enode/run.sh AGENT: runs upstream node e2e specs (e2e_node.test of
# k8s.io/kubernetes v1.37.2, built by hack/e2enode/build.sh) against AGENT,
# kernelet (bin/kernelet installed as "kubelet") or kubelet (the real kubelet
# v1.37.2 of hack/apiserver/build.sh KUBELET=1, or $KERNELET_KUBELET_BIN),
# the way upstream runs them: e2e_node.test starts etcd, kube-apiserver and
# the namespace controller in process and "the kubelet" as a transient
# systemd unit, and the specs reconfigure and restart it with systemctl.
#
# This host's PID 1 is not systemd: hack/e2enode/systemd-shim stands in for
# systemd-run, systemctl and sudo (the unit's process started detached,
# killed with SIGTERM, restarted with the recorded command line). The run
# lives in its own mount and network namespaces (unshare): 127.0.0.1:6443,
# :10248, :10250, :10255 and /var/lib/kubelet, /var/log/pods,
# /var/log/containers, /run/cdi (bind-mounted from the work dir) are its own, nothing else on the machine is touched but
# the cgroupRoot /<run>-e2enode (removed at the end), the host's 2 MiB huge
# page pools the memory manager specs size (put back at the end) and a private containerd
# (bin/testenv containerd up/down, its own state, CNI bridge and images; the
# specs' images built by hack/e2enode/images and imported into it).
#
# Environment:
#   E2E_NODE_FOCUS  ginkgo focus (default: the device plugin, device manager,
#                   CPU/memory/topology manager and podresources specs)
#   E2E_NODE_SKIP   ginkgo skip (default: \[Flaky\])
#   E2E_NODE_DRY=1  only list the specs the focus selects
#   E2E_NODE_OUT    result directory (default bin/e2e-node/<agent>-<time>):
#                   junit.xml, results.tsv (status, seconds, spec), e2e.log,
#                   kubelet.log, the work dir
#   E2E_NODE_TIMEOUT ginkgo suite timeout (default 3h)
#   E2E_NODE_CGROUP_ROOT=/  the agents' cgroupRoot "/" instead of the run's
#                   /<run>-e2enode (upstream's CPU manager specs read
#                   /sys/fs/cgroup/cpuset/kubepods/...): refused while any
#                   hierarchy has a /kubepods (then not this run's); the run's
#                   /kubepods is removed at the end
#   KERNELET_TEST_RUNTIME containerd (Debian's 1.6, default) or containerd2
# Prints, last, the counts of passed, failed and skipped specs.
set -euo pipefail
ROOT=${E2ENODE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT"
AGENT=${1:?usage: hack/e2enode/run.sh kernelet|kubelet}
FOCUS=${E2E_NODE_FOCUS:-'\[sig-node\] (Device Plugin|Device Manager|CPU Manager|Memory Manager|Topology Manager|POD Resources API|Pod Resources API)'}
SKIP=${E2E_NODE_SKIP:-'\[Flaky\]'}
BIN=${BIN:-$ROOT/bin}
log() { echo "e2enode: $*" >&2; }

if [ "${E2ENODE_INNER:-}" != 1 ]; then
  # ------------------------------------------------ outside the namespaces
  [ "$(id -u)" = 0 ] || { log "run as root"; exit 1; }
  case $AGENT in kernelet | kubelet) ;; *) log "AGENT must be kernelet or kubelet, not $AGENT"; exit 1 ;; esac
  out=$(hack/e2enode/build.sh) || exit 1
  E2E_NODE_TEST=$(echo "$out" | sed -n 's/^E2E_NODE_TEST=//p')
  out=$(SAMPLE_DEVICE_PLUGIN=1 hack/apiserver/build.sh) || exit 1
  SAMPLE_DEVICE_PLUGIN=$(echo "$out" | sed -n 's/^SAMPLE_DEVICE_PLUGIN=//p')
  if [ "$AGENT" = kubelet ]; then
    AGENT_BIN=${KERNELET_KUBELET_BIN:-}
    if [ -z "$AGENT_BIN" ]; then
      out=$(KUBELET=1 hack/apiserver/build.sh) || exit 1
      AGENT_BIN=$(echo "$out" | sed -n 's/^KUBELET=//p')
    fi
  else
    AGENT_BIN=$BIN/kernelet
  fi
  for b in "$AGENT_BIN" "$BIN/testenv" "$BIN/testbox"; do
    [ -x "$b" ] || { log "$b is missing (make build)"; exit 1; }
  done
  OUT=${E2E_NODE_OUT:-$ROOT/bin/e2e-node/$AGENT-$(date -u +%Y%m%dT%H%M%S)}
  mkdir -p "$OUT"
  go build -o "$OUT/images" ./hack/e2enode/images
  export E2ENODE_INNER=1 E2ENODE_ROOT=$ROOT E2E_NODE_TEST SAMPLE_DEVICE_PLUGIN AGENT_BIN OUT
  # The run's own mount namespace (mounts propagate in from the host, not
  # out) and network namespace; from a copy of this script, which bash reads
  # as it goes (an edit of the checkout must not change a running run).
  cp "$0" "$OUT/run.sh"
  exec unshare --mount --propagation slave --net -- bash "$OUT/run.sh" "$@"
fi

# ------------------------------------------------------ inside the namespaces
if [ -z "${KERNELET_TEST_RUN:-}" ]; then
  KERNELET_TEST_RUN=kltest$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
fi
export KERNELET_TEST_RUN
# The run's owner lock: while it lives, `testenv reap` leaves its containerd
# alone; children must not inherit it (9>&-).
rundir="${KERNELET_TEST_STATE:-/run/kltest}/$KERNELET_TEST_RUN"
mkdir -p "$rundir"
exec 9>"$rundir/owner-$$.lock"
flock -n 9

work=$OUT/work
mkdir -p "$work/var-lib-kubelet" "$work/cdi" "$work/units" "$work/shim" "$work/k8sbin"
cgroot="/$KERNELET_TEST_RUN-e2enode"
# cgclean: what the run removes at the end; with cgroupRoot "/" the agents'
# /kubepods only, which must not exist before (someone else's).
cgclean=$cgroot
case ${E2E_NODE_CGROUP_ROOT:-} in
  "") ;;
  /)
    cgroot=/ cgclean=/kubepods
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
      if [ -e "${h}kubepods" ]; then
        echo "e2enode: ${h}kubepods exists (not this run's): E2E_NODE_CGROUP_ROOT=/ refused" >&2
        rm -f "$rundir/owner-$$.lock"; rmdir "$rundir" 2>/dev/null
        exit 1
      fi
    done
    ;;
  *) echo "e2enode: E2E_NODE_CGROUP_ROOT must be / or unset, not $E2E_NODE_CGROUP_ROOT" >&2; exit 1 ;;
esac
made_cdi=0
node_ip=10.123.0.1

# shellcheck source=hack/lib/cgroups.sh
. "$ROOT/hack/lib/cgroups.sh"
cleanup() {
  local rc=$? u f
  trap '' INT TERM
  # The memory manager specs size the host's 2 MiB huge page pools (and set
  # them back to 0 after each spec): put back what the run found.
  for f in "${!hugepages[@]}"; do echo "${hugepages[$f]}" >"$f" 2>/dev/null || log "could not restore $f"; done
  for u in "$work"/units/*/; do
    [ -d "$u" ] && E2ENODE_SHIM_STATE=$work/units "$work/shim/systemctl" stop "$(basename "$u")" 9>&- || true
  done
  "$BIN/testenv" containerd down >"$OUT/containerd-down.log" 2>&1 9>&- || log "containerd down failed: $OUT/containerd-down.log"
  rm_cgroup_root "$cgclean" e2enode
  umount /var/lib/kubelet /var/log/pods /var/log/containers 2>/dev/null || true
  umount /run/cdi 2>/dev/null || true
  [ $made_cdi = 1 ] && rmdir /run/cdi 2>/dev/null
  rm -f "$rundir/owner-$$.lock"; rmdir "$rundir" 2>/dev/null || true
  exit $rc
}
declare -A hugepages=()
for f in /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages; do
  [ -e "$f" ] && hugepages[$f]=$(cat "$f")
done
trap cleanup EXIT
trap 'exit 130' INT TERM

# Network: loopback, and a veth pair (this kernel has no dummy links) with
# the node's address and the default route on one end (the apiserver reaches
# the kubelet API there).
ip link set lo up
ip link add e2enode0 type veth peer name e2enode1
ip addr add "$node_ip/24" dev e2enode0
ip link set e2enode0 up
ip link set e2enode1 up
ip route add default dev e2enode0

# Mounts: /var/lib/kubelet, /var/log/pods, /var/log/containers and /run/cdi
# of this run only (a kubelet removes the log directories of pods it does
# not know: two runs, or a run and another agent, must not share them).
for d in var-lib-kubelet:/var/lib/kubelet pod-logs:/var/log/pods container-logs:/var/log/containers; do
  mkdir -p "$work/${d%%:*}" "${d#*:}"
  mount --bind "$work/${d%%:*}" "${d#*:}"
done
if [ ! -d /run/cdi ]; then mkdir /run/cdi; made_cdi=1; fi
mount --bind "$work/cdi" /run/cdi

# The cgroupRoot, in every hierarchy (kubelet requires it to exist).
[ "$cgroot" = / ] || for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [ -e "${h}cgroup.procs" ] || continue
  mkdir -p "${h%/}$cgroot"
  if [ -e "${h}cpuset.cpus" ]; then
    cat "${h}cpuset.cpus" >"${h%/}$cgroot/cpuset.cpus"
    cat "${h}cpuset.mems" >"${h%/}$cgroot/cpuset.mems"
  fi
done

log "run $KERNELET_TEST_RUN: starting a private containerd"
eval "$("$BIN/testenv" containerd up --testbox "$BIN/testbox" 2>"$OUT/containerd-up.log" 9>&-)"
sock=${CONTAINERD_ENDPOINT#unix://}
"$OUT/images" --sample-device-plugin "$SAMPLE_DEVICE_PLUGIN" --out "$work/e2e-images.tar" --import "$sock" 9>&-

# The systemd stand-in and "the kubelet".
cp "$ROOT/hack/e2enode/systemd-shim" "$work/shim/systemd-shim"
for c in systemd-run systemctl sudo; do ln -sf systemd-shim "$work/shim/$c"; done
export PATH="$work/shim:$PATH" E2ENODE_SHIM_STATE=$work/units
# e2e_node.test runs the "kubelet" beside its own os.Args[0] (its
# --k8s-bin-dir is not on its command line).
ln -sf "$AGENT_BIN" "$work/k8sbin/kubelet"
ln -sf "$E2E_NODE_TEST" "$work/k8sbin/e2e_node.test"

cat >"$work/base-kubelet-config.yaml" <<CFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# upstream's test/e2e_node/jenkins/default-kubelet-config.yaml, but for the
# cgroupRoot (this run's) and podCIDR (none: kernelet refuses it)
cgroupDriver: cgroupfs
cgroupRoot: $cgroot
failCgroupV1: false
volumeStatsAggPeriod: 10s
fileCheckFrequency: 10s
evictionPressureTransitionPeriod: 30s
evictionHard:
  memory.available: 250Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
evictionMinimumReclaim:
  nodefs.available: 5%
  nodefs.inodesFree: 5%
serializeImagePulls: false
# kernelet refuses kubelet v1.37's default NeverVerifyPreloadedImages
imagePullCredentialsVerificationPolicy: NeverVerify
# no image GC on disk usage: the specs' images are imported, not pullable
# offline, and this shared disk has been above 85 %
imageGCHighThresholdPercent: 100
CFG

args=(
  --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" --ginkgo.no-color --ginkgo.v
  --ginkgo.timeout="${E2E_NODE_TIMEOUT:-3h}" --ginkgo.junit-report="$OUT/junit.xml"
  --report-dir="$OUT" --node-name=e2enode
  --container-runtime-endpoint="$CONTAINERD_ENDPOINT"
  --kubelet-config-file="$work/base-kubelet-config.yaml"
  # Appended last, so they win: kubeletCgroups (e2e_node sets /kubelet.slice
  # under systemd; kernelet refuses it, and for kubelet it would be a cgroup
  # outside the run's) and --config-dir (e2e_node passes an empty drop-in
  # directory; kernelet refuses the flag) emptied, the node IP.
  --kubelet-flags="--kubelet-cgroups= --config-dir= --node-ip=$node_ip"
  --prepull-images=false
)
[ "${E2E_NODE_DRY:-}" = 1 ] && args+=(--ginkgo.dry-run)
log "$AGENT ($AGENT_BIN): e2e_node.test in $work, results in $OUT"
rc=0
(cd "$work" && "$work/k8sbin/e2e_node.test" "${args[@]}" 9>&-) >"$OUT/e2e.log" 2>&1 || rc=$?

# results.tsv: status, seconds, spec, reason (of a skip or failure), the
# specs the focus selected only (the rest are "skipped" without a reason);
# then the counts.
if [ -f "$OUT/junit.xml" ]; then
  python3 - "$OUT/junit.xml" >"$OUT/results.tsv" <<'PY'
import sys, xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    name = tc.get("name", "")
    if not name.startswith("[It]"):
        continue
    reason = ""
    for tag in ("failure", "error", "skipped"):
        el = tc.find(tag)
        if el is not None:
            reason = (el.get("message") or "").strip()
            break
    if tc.get("status") == "skipped" and reason == "skipped":
        continue  # not selected by the focus
    reason = reason.removeprefix("skipped - ").splitlines()[0][:200] if reason else ""
    print("%s\t%.0f\t%s\t%s" % (tc.get("status", "?"), float(tc.get("time", "0")), name[5:], reason))
PY
  for s in passed failed skipped; do
    printf '%s %d  ' "$s" "$(awk -F'\t' -v s=$s '$1 == s' "$OUT/results.tsv" | wc -l)"
  done
  echo "($AGENT, $OUT/results.tsv)"
fi
exit $rc
