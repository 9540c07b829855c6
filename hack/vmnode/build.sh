#!/usr/bin/env bash
# Builds the root disk of kernelet's cgroup v2 test node (test/env/vmnode):
# a Debian 12 guest with systemd as PID 1 (systemd-oomd installed, not enabled), containerd 2 (hack/containerd2/containerd.sh),
# runc 1.5 (hack/containerd2/runc.sh, at /usr/local/sbin/runc: Debian's runc 1.1.5 has no
# idmapped mounts, without which containerd 2 reports no user namespace support), CNI plugins
# and iproute2, the host's cloud kernel's modules
# and the test images (hack/images: pause and testbox) imported into
# containerd's k8s.io namespace. kernelet itself is not in the image: each run
# copies bin/kernelet in (test/env/vmnode), so a code change needs no rebuild.
#
#   $CACHE/vmnode/<key>/node.qcow2   the disk (runs boot copy-on-write overlays of it)
#   $CACHE/vmnode/<key>/kernel       the path of the kernel whose modules it holds
#   $CACHE/vmnode/<key>/info         what went in: versions, packages, build time
#
# CACHE=${KERNELET_CACHE:-$HOME/.cache/kernelet}. <key> hashes every input:
# this script, the containerd and runc versions and build directories (keyed
# by their recipes), the files under hack/vmnode/rootfs, the Debian
# suite and package list, the kernel release, the containerd version and the
# test images' tar. A cached image only prints what it found; builds
# serialise on a flock; the three most recently used images are kept, older
# ones removed. Debian's packages come from the apt mirror this
# machine uses (debootstrap, .debs cached in $CACHE/vmnode/debs).
#
# Environment:
#   KERNELET_TESTBOX    the static testbox binary of the test images (default bin/testbox: make build)
#   CONTAINERD_VERSION  passed to containerd.sh (default there: v2.4.2)
#   VMNODE_KERNEL       the guest kernel (default: the newest /boot/vmlinuz-*-cloud-amd64)
#   VMNODE_MIRROR       the Debian mirror (default: the first deb.debian.org-style URI in /etc/apt)
#
# Prints, last, VMNODE_IMAGE=<qcow2> and VMNODE_KERNEL=<kernel>.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
CACHE=${KERNELET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet}
SUITE=bookworm
PACKAGES=systemd,systemd-sysv,systemd-oomd,udev,dbus,iproute2,iptables,kmod,libseccomp2,containernetworking-plugins,openssh-server,procps
DISK_SIZE=4G

log() { echo "hack/vmnode/build.sh: $*" >&2; }
for c in debootstrap mkfs.ext4 qemu-img flock go sha256sum; do
  command -v "$c" >/dev/null || { log "$c is required (hack/deps.sh vmnode)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { log "must run as root (debootstrap, image import)"; exit 1; }

KERNEL=${VMNODE_KERNEL:-$(ls /boot/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V | tail -1)}
[ -r "$KERNEL" ] || { log "no guest kernel: apt-get install linux-image-cloud-amd64"; exit 1; }
kver=${KERNEL#/boot/vmlinuz-}
[ -d "/lib/modules/$kver" ] || { log "no /lib/modules/$kver for $KERNEL"; exit 1; }
MIRROR=${VMNODE_MIRROR:-$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null |
  grep -oE 'https?://[^ ]+' | head -1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}

# containerd 2 (cached by its own version key).
cout=$("$here/../containerd2/containerd.sh")
echo "$cout" | grep -v '^CONTAINERD_' >&2
CONTAINERD_DIR=$(echo "$cout" | sed -n 's/^CONTAINERD_DIR=//p')
CONTAINERD_VERSION=$(echo "$cout" | sed -n 's/^CONTAINERD_VERSION=//p')
# runc (cached by its own version key; cgo against libseccomp, which the
# guest has from Debian's libseccomp2: host and guest are both bookworm).
rout=$("$here/../containerd2/runc.sh")
echo "$rout" | grep -v '^RUNC_' >&2
RUNC_DIR=$(echo "$rout" | sed -n 's/^RUNC_DIR=//p')
RUNC_VERSION=$(echo "$rout" | sed -n 's/^RUNC_VERSION=//p')

# The test images: built each time (a few seconds), their tar is a key input.
TESTBOX=${KERNELET_TESTBOX:-$repo/bin/testbox}
[ -x "$TESTBOX" ] || { log "no testbox binary at $TESTBOX (make build)"; exit 1; }
mkdir -p "$CACHE/vmnode"
work=$(mktemp -d "$CACHE/vmnode/.work.XXXXXX")
cleanup() {
  # Stop the import's containerd by pid if it is still up, then remove.
  if [ -s "$work/containerd.pid" ]; then kill "$(cat "$work/containerd.pid")" 2>/dev/null || true; sleep 1; fi
  grep -q " $work/" /proc/mounts && awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$repo" && GOFLAGS=-buildvcs=false go run ./hack/images -out "$work/images" -testbox "$TESTBOX" >/dev/null)

# import_images ROOTFS WORK imports WORK/images/images.tar into the
# containerd root of ROOTFS with containerd 2 run on this host for the import
# only (CRI off, state and socket under WORK), then stops it by pid.
import_images() {
  local rootfs=$1 w=$2
  mkdir -p "$w/cd"
  cat >"$w/cd/config.toml" <<TOML
version = 3
root = "$rootfs/var/lib/containerd"
state = "$w/cd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.erofs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$w/cd/containerd.sock"
[ttrpc]
  address = "$w/cd/containerd.sock.ttrpc"
TOML
  "$CONTAINERD_DIR/containerd" --config "$w/cd/config.toml" >"$w/cd/log" 2>&1 &
  echo $! >"$w/containerd.pid"
  local i
  for i in $(seq 100); do [ -S "$w/cd/containerd.sock" ] && break; sleep 0.1; done
  "$CONTAINERD_DIR/ctr" --address "$w/cd/containerd.sock" --namespace k8s.io images import \
    --snapshotter overlayfs "$w/images/images.tar" >&2 || { cat "$w/cd/log" >&2; log "image import failed"; exit 1; }
  "$CONTAINERD_DIR/ctr" --address "$w/cd/containerd.sock" --namespace k8s.io images ls -q >&2
  local pid; pid=$(cat "$w/containerd.pid")
  kill "$pid"; wait "$pid" || true
  rm -f "$w/containerd.pid"
  rm -rf "$w/cd"
}

key=$( {
  echo "suite=$SUITE packages=$PACKAGES disk=$DISK_SIZE kernel=$kver containerd=$CONTAINERD_VERSION $(basename "$CONTAINERD_DIR") runc=$(basename "$RUNC_DIR")"
  sha256sum "$here/build.sh" "$work/images/images.tar" | cut -d' ' -f1
  (cd "$here/rootfs" && find . -type f | LC_ALL=C sort | xargs sha256sum)
} | sha256sum | cut -c1-16)
dir="$CACHE/vmnode/$key"
IMAGE="$dir/node.qcow2"

exec 9>"$CACHE/vmnode/.lock"
flock 9
if [ -s "$IMAGE" ]; then
  log "cached: node image $key ($(du -h --apparent-size "$IMAGE" | cut -f1) qcow2) in $dir"
  touch "$dir" # most recently used, for the pruning below
else
  log "building node image $key (Debian $SUITE, kernel $kver, containerd $CONTAINERD_VERSION) from $MIRROR"
  start=$SECONDS
  rootfs="$work/rootfs"
  mkdir -p "$CACHE/vmnode/debs"
  nice -n 10 debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE/vmnode/debs" \
    "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -30 "$work/debootstrap.log" >&2; log "debootstrap failed (log above)"; exit 1; }
  log "debootstrap done after $((SECONDS - start)) s"

  # Small: no docs, man pages, translations, apt lists or caches.
  rm -rf "$rootfs"/usr/share/{doc,man,info,locale}/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/debconf/*-old
  # The guest kernel's modules (virtio, overlay, bridge, netfilter …).
  mkdir -p "$rootfs/lib/modules"
  cp -a "/lib/modules/$kver" "$rootfs/lib/modules/"
  # containerd 2 and its shim and ctr.
  install -m 0755 "$CONTAINERD_DIR"/{containerd,containerd-shim-runc-v2,ctr} "$rootfs/usr/local/bin/"
  install -D -m 0755 "$RUNC_DIR/runc" "$rootfs/usr/local/sbin/runc"
  # The node's configuration files.
  cp -a "$here/rootfs/." "$rootfs/"
  chown -R 0:0 "$rootfs/etc/containerd" "$rootfs/etc/cni" "$rootfs/etc/systemd" "$rootfs/etc/ssh/sshd_config.d" \
    "$rootfs/etc/modules-load.d" "$rootfs/etc/sysctl.d"
  chroot "$rootfs" systemctl enable containerd.service systemd-networkd.service >/dev/null 2>&1
  # systemd-oomd is there for the pressure benchmark's column, which starts
  # it; off otherwise (it would act only on units given ManagedOOM*=).
  # (The socket too: PID 1 connecting to it would start the service.)
  chroot "$rootfs" systemctl disable systemd-oomd.service systemd-oomd.socket >/dev/null 2>&1
  if ls "$rootfs"/etc/systemd/system/*.wants/systemd-oomd.* >/dev/null 2>&1; then log "systemd-oomd still enabled"; exit 1; fi
  # Nothing periodic or waiting in a test VM.
  chroot "$rootfs" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
    fstrim.timer systemd-networkd-wait-online.service >/dev/null 2>&1
  echo kernelet-node >"$rootfs/etc/hostname"
  printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
  : >"$rootfs/etc/fstab"
  rm -f "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"
  : >"$rootfs/etc/machine-id" # systemd makes one per boot
  install -d -m 0700 "$rootfs/root/.ssh"

  # The test images, imported into containerd's k8s.io namespace by the same
  # containerd 2 (run here for the import only, its root in the guest's).
  import_images "$rootfs" "$work"

  dpkg_list=$(chroot "$rootfs" dpkg-query -W -f '${Package} ${Version}\n')
  mkfs.ext4 -q -L kernelet-node -E root_owner=0:0 -d "$rootfs" "$work/disk.raw" "$DISK_SIZE"
  mkdir -p "$dir.tmp"
  qemu-img convert -O qcow2 "$work/disk.raw" "$dir.tmp/node.qcow2"
  echo "$KERNEL" >"$dir.tmp/kernel"
  {
    echo "built: $(date -u +%FT%TZ) in $((SECONDS - start)) s"
    echo "suite: $SUITE from $MIRROR"
    echo "kernel: $KERNEL"
    echo "containerd: $("$CONTAINERD_DIR/containerd" --version)"
    echo "runc: $RUNC_VERSION ($("$RUNC_DIR/runc" --version | head -1))"
    echo "rootfs: $(du -sh "$rootfs" | cut -f1)"
    echo "packages:"; echo "$dpkg_list"
  } >"$dir.tmp/info"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
  log "built node image $key in $((SECONDS - start)) s: $(du -h "$IMAGE" | cut -f1) qcow2, rootfs $(du -sh "$rootfs" | cut -f1)"
fi
# Keep the three most recently used images (other checkouts may use other
# inputs); a running node keeps its backing disk open, so removing one
# under it does no harm.
ls -dt "$CACHE"/vmnode/*/ | { grep -E '/[0-9a-f]{16}/$' || true; } | tail -n +4 | while read -r old; do
  log "pruning the node image $(basename "$old") (not among the three most recently used)"
  rm -rf "$old"
done
exec 9>&-
echo "VMNODE_IMAGE=$IMAGE"
echo "VMNODE_KERNEL=$(cat "$dir/kernel")"
