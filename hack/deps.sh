#!/usr/bin/env bash
# Installs the Debian packages kernelet's tests and demo need, only those
# missing. Usage: hack/deps.sh [containerd|runc|vm|vmnode|bpf|metrics|browser|csi|all]...  (default: all)
# Idempotent; runs `apt-get update` once, only when something is missing.
set -euo pipefail

declare -A PKGS=(
  [containerd]="containerd runc containernetworking-plugins busybox-static iproute2"
  # runc built from the Go module proxy for the host's containerd 2 (hack/containerd2/runc.sh: cgo + libseccomp)
  [runc]="libseccomp-dev pkg-config gcc libc6-dev"
  [vm]="qemu-system-x86 linux-image-cloud-amd64 busybox-static cpio"
  # the cgroup v2 test node (hack/vmnode/build.sh, test/env/vmnode)
  [vmnode]="qemu-system-x86 qemu-utils linux-image-cloud-amd64 busybox-static debootstrap e2fsprogs openssh-client"
  [bpf]="clang llvm libbpf-dev bpftool"
  [metrics]="prometheus"
  # the dashboard test (headless Chromium) and the `kernelet top` test (tmux)
  [browser]="chromium tmux"
  # the test CSI driver's image volumes: ext4 and XFS (online growth needs
  # xfs_growfs where CAP_SYS_RESOURCE, which ext4's online resize wants, is missing)
  [csi]="e2fsprogs xfsprogs"
)

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(all)
want=()
for p in "${parts[@]}"; do
  if [ "$p" = all ]; then
    for k in "${!PKGS[@]}"; do want+=(${PKGS[$k]}); done
  elif [ -n "${PKGS[$p]:-}" ]; then
    want+=(${PKGS[$p]})
  else
    echo "hack/deps.sh: unknown part '$p' (known: ${!PKGS[*]} all)" >&2; exit 2
  fi
done

missing=()
for pkg in $(printf '%s\n' "${want[@]}" | sort -u); do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "hack/deps.sh: need root to install: ${missing[*]}" >&2; exit 1
fi
echo "hack/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# policy-rc.d keeps Debian from starting containerd/etcd/prometheus as services.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
