#!/usr/bin/env bash
# Builds, from the Go module proxy, offline OCI image tars of the images that
# the upstream e2e CSI mock driver of k8s.io/kubernetes KUBE_VERSION (default
# v1.37.2) deploys, for the conformance kit's local registry (run.sh beside
# this file). A measuring tool beside the project, like hack/e2enode: not
# part of make test.
#
# The images are read from the mock manifests of that version
# (test/e2e/testing-manifests/storage-csi/mock/*.yaml in the module cache),
# so the names and tags are exactly the ones the specs deploy:
#
#   sig-storage/csi-provisioner, csi-attacher, csi-resizer, csi-snapshotter:
#       github.com/kubernetes-csi/external-<x>/vN at the image's tag,
#       cmd/csi-<x> built statically (CGO_ENABLED=0) from a writable copy
#       of the module (its go.mod has replace directives, so go install
#       pkg@version refuses it); image: the binary as /csi-<x>, the
#       entrypoint, as upstream's distroless images have it;
#   sig-storage/csi-node-driver-registrar, hostpathplugin:
#       github.com/kubernetes-csi/node-driver-registrar and
#       csi-driver-host-path; the module proxy serves neither (403 "not
#       available", any version), so they cannot be built offline. In their
#       place (STANDINS=1, the default) hack/csimock/standin, built from this
#       repository, under the upstream names: a registrar that does what
#       node-driver-registrar does, and a hostpathplugin that only has the
#       proxy mode of e2e's embedded mock driver (the specs with hooks); the
#       in-cluster mock driver of the other specs is not there (it refuses to
#       start). images.txt marks them "stand-in". With STANDINS=0 they are
#       reported MISSING and the script exits 3 after building the rest;
#   e2e-test-images/busybox:<tag> (the embedded mock's helper container):
#       Debian's busybox-static, made as the kit's images.sh makes its
#       busybox stand-in.
#
# Image tars are written with the kit's mkimage tool, called, not copied:
# $KIT/code/mkimage built into the cache (KIT=/work/shared/conformance, or
# $KIT). Everything goes to CACHE=${KERNELET_CACHE:-~/.cache/kernelet}/
# csi-mock/<KUBE_VERSION>: bin/ (binaries), src/ (module copies),
# images/<name>-<tag>.tar, images.txt (one "image<TAB>tar or MISSING: why"
# a line, a third field "stand-in" for a stand-in). A tar that exists is not
# rebuilt (but the stand-in's, from this repository's source, always is); a
# flock serialises runs.
# SNAPSHOTTER=0 skips csi-snapshotter (only the snapshot specs use it, and
# they also need the snapshot CRDs and controller, which the kit lacks).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
dir="$CACHE/csi-mock/$KUBE_VERSION"
KIT=${KIT:-/work/shared/conformance}
SNAPSHOTTER=${SNAPSHOTTER:-1}
STANDINS=${STANDINS:-1}
root=$(cd "$(dirname "$0")/../.." && pwd)

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
unset GOOS GOARCH
log() { echo "hack/csimock/build.sh: $*" >&2; }
command -v go >/dev/null || { log "the go toolchain is required"; exit 1; }
[ -x /usr/bin/busybox ] || { log "/usr/bin/busybox missing (apt-get install busybox-static)"; exit 1; }
[ -f "$KIT/code/mkimage/main.go" ] || { log "the kit's mkimage source $KIT/code/mkimage is missing (set KIT)"; exit 1; }

mkdir -p "$dir/bin" "$dir/src" "$dir/images"
exec 8>"$dir/.lock"
flock 8

K=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p')
manifests="$K/test/e2e/testing-manifests/storage-csi/mock"
[ -d "$manifests" ] || { log "$manifests missing"; exit 1; }

# mkimage: the kit's tool, built from its source into the cache.
if [ ! "$dir/bin/mkimage" -nt "$KIT/code/mkimage/main.go" ]; then
  rm -rf "$dir/src/mkimage"; cp -r "$KIT/code/mkimage" "$dir/src/mkimage"; chmod -R u+w "$dir/src/mkimage"
  (cd "$dir/src/mkimage" && go build -buildvcs=false -trimpath -ldflags='-s -w' -o "$dir/bin/mkimage" .)
fi
M="$dir/bin/mkimage"

: > "$dir/images.txt.tmp"
record() { printf '%s\t%s\n' "$1" "$2" >> "$dir/images.txt.tmp"; }
missing=0

# moddir MODULE@VERSION: the module's directory in the module cache, or
# nothing (the proxy's error on stderr).
moddir() {
  local out
  out=$(go mod download -json "$1" 2>/dev/null || true)
  if echo "$out" | grep -q '"Error"'; then
    echo "$out" | sed -nE 's/^\s*"Error": "(.*)",?$/\1/p' | sed 's/\\n.*//' >&2
    return 0
  fi
  echo "$out" | sed -nE 's/^\s*"Dir": "(.*)",?$/\1/p'
}

# sidecar IMAGE REPO CMD: builds cmd/CMD of github.com/kubernetes-csi/REPO
# at the image's tag into an image with /CMD as the entrypoint.
sidecar() {
  local image=$1 repo=$2 cmd=$3 tag=${1##*:} major mod src tar start
  tar="$dir/images/$cmd-$tag.tar"
  if [ -f "$tar" ]; then record "$image" "$tar"; return 0; fi
  major=$(echo "$tag" | sed -E 's/^v([0-9]+)\..*/\1/')
  mod=github.com/kubernetes-csi/$repo; [ "$major" -ge 2 ] && mod=$mod/v$major
  src=$(moddir "$mod@$tag")
  if [ -z "$src" ] && [ "$STANDINS" = 1 ] && { [ "$cmd" = hostpathplugin ] || [ "$cmd" = csi-node-driver-registrar ]; }; then
    log "$mod@$tag is not served by the Go module proxy: $image is hack/csimock/standin"
    standin "$image" "$cmd"; return 0
  fi
  if [ -z "$src" ]; then
    log "MISSING $image: $mod@$tag is not served by the Go module proxy"
    record "$image" "MISSING: $mod@$tag not on the Go module proxy"; missing=$((missing + 1)); return 0
  fi
  start=$SECONDS
  rm -rf "$dir/src/$cmd"; cp -r "$src" "$dir/src/$cmd"; chmod -R u+w "$dir/src/$cmd"
  if grep -qE '=> \./client$' "$dir/src/$cmd/go.mod"; then
    # The snapshotter's client is a nested module: not in the module's zip.
    local cmod=github.com/kubernetes-csi/$repo/client/v$major client
    client=$(moddir "$cmod@$tag")
    if [ -z "$client" ]; then
      log "MISSING $image: $cmod@$tag is not served by the Go module proxy"
      record "$image" "MISSING: $cmod@$tag not on the Go module proxy"; missing=$((missing + 1)); return 0
    fi
    rm -rf "$dir/src/$cmd/client"; cp -r "$client" "$dir/src/$cmd/client"; chmod -R u+w "$dir/src/$cmd/client"
  fi
  log "building $cmd $tag ($mod)"
  (cd "$dir/src/$cmd" && go build -buildvcs=false -trimpath -ldflags "-s -w -X main.version=$tag" \
    -o "$dir/bin/$cmd-$tag" "./cmd/$cmd")
  "$M" -o "$tar.tmp" -name "$image" -file "$dir/bin/$cmd-$tag:/$cmd:0755" \
    -entrypoint "[\"/$cmd\"]" >/dev/null
  mv "$tar.tmp" "$tar"
  log "built $image in $((SECONDS - start)) s: $(du -h "$dir/bin/$cmd-$tag" | cut -f1) binary, $(du -h "$tar" | cut -f1) tar"
  record "$image" "$tar"
}

# standin IMAGE CMD: hack/csimock/standin as IMAGE, entrypoint "/standin MODE".
standin() {
  local image=$1 mode=hostpathplugin tar="$dir/images/standin-$2-${1##*:}.tar"
  [ "$2" = csi-node-driver-registrar ] && mode=registrar
  (cd "$root" && go build -trimpath -ldflags='-s -w' -o "$dir/bin/standin" ./hack/csimock/standin)
  "$M" -o "$tar" -name "$image" -file "$dir/bin/standin:/standin:0755" -entrypoint "[\"/standin\",\"$mode\"]" >/dev/null
  printf '%s\t%s\tstand-in\n' "$image" "$tar" >> "$dir/images.txt.tmp"
}

images=$(sed -nE 's/^\s*image:\s*(\S+)\s*$/\1/p' "$manifests"/*.yaml | sort -u)
[ -n "$images" ] || { log "no image: lines in $manifests"; exit 1; }
for image in $images; do
  name=${image%:*}; name=${name##*/}; tag=${image##*:}
  case $name in
    csi-provisioner) sidecar "$image" external-provisioner csi-provisioner ;;
    csi-attacher) sidecar "$image" external-attacher csi-attacher ;;
    csi-resizer) sidecar "$image" external-resizer csi-resizer ;;
    csi-snapshotter)
      if [ "$SNAPSHOTTER" = 1 ]; then sidecar "$image" external-snapshotter csi-snapshotter
      else record "$image" "MISSING: skipped (SNAPSHOTTER=0)"; fi ;;
    csi-node-driver-registrar) sidecar "$image" node-driver-registrar csi-node-driver-registrar ;;
    hostpathplugin) sidecar "$image" csi-driver-host-path hostpathplugin ;;
    busybox)
      tar="$dir/images/busybox-$tag.tar"
      [ -f "$tar" ] || "$M" -o "$tar" -name "$image" -file /usr/bin/busybox:/bin/busybox:0755 \
        -busybox /bin/busybox -cmd '["sh"]' >/dev/null
      record "$image" "$tar" ;;
    *) log "MISSING $image: no recipe for it in this script"
       record "$image" "MISSING: no recipe"; missing=$((missing + 1)) ;;
  esac
done
mv "$dir/images.txt.tmp" "$dir/images.txt"
exec 8>&-
cat "$dir/images.txt"
if [ "$missing" -gt 0 ]; then
  log "$missing image(s) cannot be built offline (see MISSING above); every CSI mock spec deploys" \
      "hostpathplugin and csi-node-driver-registrar"
  exit 3
fi
