#!/usr/bin/env bash
# hack/csimock/run.sh: the conformance kit (KIT, default
# /work/shared/conformance, KUBE_VERSION v1.37.2) commands for a focused run
# of the upstream "[sig-storage] CSI Mock" specs that can run on its one
# offline node, against the real kubelet and then against kernelet, with
# the CSI mock driver's images from hack/csimock/build.sh.
#
# It makes IMGDIR (default ${TMPDIR:-/tmp}/kernelet-csimock-images-<version>):
# symlinks to every file of the kit's image dir (KIT_IMAGES, default
# ${TMPDIR:-/tmp}/kc-images-<version>: its tars and helper binaries, which
# `kit up` checks) plus the image tars build.sh listed in
# ~/.cache/kernelet/csi-mock/<version>/images.txt, so that the kit's `up`
# (IMAGES_DIR=IMGDIR) imports them and serves the registry.k8s.io ones from
# its local registry. Then it prints the kit commands, one agent after the
# other (AGENTS="kubelet kernelet"); it never runs the kit unless RUN=1.
# It refuses (exit 3) when an image the specs deploy is MISSING from
# images.txt: every CSI mock spec deploys hostpathplugin and
# csi-node-driver-registrar. When those are build.sh's stand-ins, only the
# specs that use e2e's embedded mock driver (through the stand-in's proxy
# mode: the specs with hooks) can run, and FOCUS defaults to them
# (EMBEDDED below: 21 specs in v1.37.2).
#
# The selection: FOCUS '\[sig-storage\] CSI Mock' minus SKIP, the specs this
# node cannot host (v1.37.2: 83 of 136 remain): SELinux (the node has no
# SELinux), VolumeSnapshotDataSource (no snapshot CRDs or controller in the
# kit), CSIVolumeHealth (Feature:OffByDefault), the kubelet-restart spec
# (Disruptive, needs SSH to the node) and the three StorageCapacityScoring
# specs that need two nodes. The Slow ones and default-on Beta ones are kept.
# DRY=1 lists the selection with e2e.test --ginkgo.dry-run (no cluster).
#
# Settings: KERNELET (default <repo>/bin/kernelet; copy it somewhere stable
# for a long run), PROCS (default 4), TIMEOUT (default 90m), OUTDIR (results
# root, default ${TMPDIR:-/tmp}/kernelet-csimock-results).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
KIT=${KIT:-/work/shared/conformance}
T=${TMPDIR:-/tmp}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
dir="$CACHE/csi-mock/$KUBE_VERSION"
KIT_IMAGES=${KIT_IMAGES:-$T/kc-images-$KUBE_VERSION}
IMGDIR=${IMGDIR:-$T/kernelet-csimock-images-$KUBE_VERSION}
repo=$(cd "$(dirname "$0")/../.." && pwd)
KERNELET=${KERNELET:-$repo/bin/kernelet}
AGENTS=${AGENTS:-kubelet kernelet}
OUTDIR=${OUTDIR:-$T/kernelet-csimock-results}
ALL='\[sig-storage\] CSI Mock'
EMBEDDED='\[sig-storage\] CSI Mock (fsgroup as mount option|volume (expansion CSI Volume expansion |expansion Expansion with recovery (should allow|recovery)|node stage .*(error \[|two pods)|storage capacity storage capacity exhausted))'
SKIP=${SKIP:-'\[Feature:SELinux\]|\[Feature:VolumeSnapshotDataSource\]|\[Feature:OffByDefault\]|\[Disruptive\]|\[Flaky\]|should prefer a node with|should schedule the recreated pod to the same expected node'}
log() { echo "hack/csimock/run.sh: $*" >&2; }

standins=0
if [ -f "$dir/images.txt" ] && grep -q $'\tstand-in$' "$dir/images.txt"; then standins=1; fi
if [ "$standins" = 1 ]; then FOCUS=${FOCUS:-$EMBEDDED}; else FOCUS=${FOCUS:-$ALL}; fi
case "$FOCUS$SKIP" in *"'"*) log "FOCUS and SKIP must not contain a single quote"; exit 2 ;; esac

if [ "${DRY:-0}" = 1 ]; then
  e2e=${KC_CACHE:-$HOME/.cache/kernelet-conformance}/$KUBE_VERSION/e2e.test
  [ -x "$e2e" ] || { log "$e2e missing (the kit's build makes it)"; exit 1; }
  "$e2e" --ginkgo.dry-run --ginkgo.no-color --ginkgo.v --provider=skeleton \
    --ginkgo.focus="$FOCUS" --ginkgo.skip="$SKIP" | grep -E '^\[sig-storage\] CSI Mock' | sort -u
  exit 0
fi

[ -f "$dir/images.txt" ] || { log "$dir/images.txt missing: run hack/csimock/build.sh first"; exit 1; }
[ -f "$KIT_IMAGES/agnhost.tar" ] && [ -x "$KIT_IMAGES/localreg" ] ||
  { log "$KIT_IMAGES has no kit images (KC_VERSION=$KUBE_VERSION kit build makes them)"; exit 1; }

rm -rf "$IMGDIR"; mkdir -p "$IMGDIR"
for f in "$KIT_IMAGES"/*; do [ -f "$f" ] && ln -s "$f" "$IMGDIR/"; done
missing=0
while IFS=$'\t' read -r image tar kind; do
  case $tar in
    MISSING*) log "MISSING $image (${tar#MISSING: })"; missing=$((missing + 1)) ;;
    *) ln -sf "$tar" "$IMGDIR/csimock-$(basename "$tar")"
       [ -z "$kind" ] || log "$image is hack/csimock/standin: only the embedded-driver specs (FOCUS) can run" ;;
  esac
done < "$dir/images.txt"
log "IMAGES_DIR=$IMGDIR: $(find "$IMGDIR" -name '*.tar' | wc -l) image tars"

# The kit commands: one `up`/`run`/`down` per agent, as in a kit session.
cmds() {
  local agent
  echo "export KC_VERSION=$KUBE_VERSION IMAGES_DIR=$IMGDIR PROCS=${PROCS:-4} TIMEOUT=${TIMEOUT:-90m}"
  for agent in $AGENTS; do
    case $agent in
      kubelet) echo "AGENT=kubelet $KIT/kit up" ;;
      kernelet) printf '%s\n' "AGENT=custom AGENT_CMD='$KERNELET run"' --config=$KC_KUBELET_CONFIG --kubeconfig=$KC_NODE_KUBECONFIG --root-dir=$KC_ROOT_DIR --hostname-override=$KC_NODE --node-ip=$KC_NODE_IP --v=2'"' $KIT/kit up" ;;
      *) log "AGENTS: unknown agent $agent (kubelet or kernelet)"; exit 2 ;;
    esac
    printf "OUT=%s %s run '%s' '%s'\n" "$OUTDIR/$agent" "$KIT/kit" "$FOCUS" "$SKIP"
    echo "$KIT/kit down"
  done
}
cmds
if [ "$missing" -gt 0 ]; then
  log "$missing image(s) missing: the CSI mock specs cannot run (every one deploys hostpathplugin and csi-node-driver-registrar)"
  exit 3
fi
if [ "${RUN:-0}" = 1 ]; then
  log "RUN=1: running the commands above"
  cmds | bash -euo pipefail
fi
