// Package vmnode runs kernelet's cgroup v2 test node: a Debian 12 guest with
// systemd as PID 1, the pure cgroup v2 layout (cgroup_no_v1=all), containerd
// 2 and runc, booted from the host's cloud kernel under qemu TCG.
//
// The root disk is built once by hack/vmnode/build.sh (EnsureImage) and
// cached under env.CacheDir()/vmnode keyed by its inputs; each Start boots a
// copy-on-write qcow2 overlay of it, so the cached disk is never written and
// runs are independent. Start puts the run's files (bin/kernelet, its
// configuration, an ssh key) into the guest root through a small initramfs
// that loads the virtio modules, mounts the disk, copies them in and hands
// over to systemd. The guest reaches the host as 10.0.2.2 (qemu user-mode
// networking: the host's 127.0.0.1); the host reaches the guest's sshd
// through a forwarded port on 127.0.0.1 (Node.SSH, Node.Run); with
// Options.HostLink, also directly on a point-to-point link over a tap
// device qemu creates and the kernel removes with it (Node.Link). Stop and Down
// kill qemu by PID and remove the run's files, also after a crash.
//
// For tests and hack/ tools only; kernelet never imports it.
package vmnode
