package vmnode

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestResolveModules(t *testing.T) {
	dep := `kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
`
	got, err := resolveModules(dep, []string{"virtio_mmio", "virtio_blk"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"kernel/drivers/virtio/virtio_ring.ko", "kernel/drivers/virtio/virtio.ko",
		"kernel/drivers/virtio/virtio_mmio.ko", "kernel/drivers/block/virtio_blk.ko"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if _, err := resolveModules(dep, []string{"ext4"}); err == nil || !strings.Contains(err.Error(), "ext4") {
		t.Fatalf("a module not listed: %v, want an error naming it", err)
	}
}

func TestKerneletFiles(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kernelet")
	if err := os.WriteFile(bin, staticELF(), 0o755); err != nil {
		t.Fatal(err)
	}
	k := Kernelet{Binary: bin, Config: []byte("kind: KubeletConfiguration\n"), Kubeconfig: []byte("kc"), NodeName: "n1", ExtraArgs: []string{"-v", "2"}}
	files, err := k.Files()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	dropIn := string(byPath[kerneletDropIn].Data)
	want := "ExecStart=\nExecStart=/usr/local/bin/kernelet run --config /etc/kernelet/config.yaml --node-ip 10.0.2.15 --kubeconfig /etc/kernelet/kubeconfig --hostname-override n1 -v 2\n"
	if !strings.HasSuffix(dropIn, want) {
		t.Fatalf("drop-in:\n%s\nwant it to end with:\n%s", dropIn, want)
	}
	if f := byPath[KerneletKubeconfig]; string(f.Data) != "kc" || f.Mode != 0o600 {
		t.Fatalf("kubeconfig file %+v", f)
	}
	if !strings.Contains(string(byPath["/etc/systemd/system/"+KerneletUnit].Data), "ExecStart=/usr/local/bin/kernelet run") {
		t.Fatal("the unit is not deploy/kernelet.service")
	}
	if c := string(byPath[ContainerdConfigPath].Data); !strings.Contains(c, "SystemdCgroup = false\n") {
		t.Fatalf("containerd config of the cgroupfs node:\n%s", c)
	}
	// The systemd driver: containerd's SystemdCgroup and deploy/config.yaml's cgroupDriver.
	sd := Kernelet{Binary: bin, CgroupDriver: "systemd"}
	files, err = sd.Files()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		byPath[f.Path] = f
	}
	if c := string(byPath[ContainerdConfigPath].Data); !strings.Contains(c, "          SystemdCgroup = true\n") || strings.Contains(c, "SystemdCgroup = false") {
		t.Fatalf("containerd config of the systemd node:\n%s", c)
	}
	if c := string(byPath[KerneletConfig].Data); !strings.Contains(c, "\ncgroupDriver: systemd\n") {
		t.Fatalf("kernelet config of the systemd node:\n%s", c)
	}
	if _, err := (Kernelet{Binary: bin, CgroupDriver: "openrc"}).Files(); err == nil || !strings.Contains(err.Error(), "openrc") {
		t.Fatalf("an unknown driver: %v", err)
	}
	k.ExtraArgs = []string{"--x=a b"}
	if _, err := k.Files(); err == nil || !strings.Contains(err.Error(), "a b") {
		t.Fatalf("an argument that needs quoting: %v, want an error naming it", err)
	}
}

// staticELF returns a minimal x86-64 ELF header without program headers:
// no PT_INTERP, so a "static" binary to images.CheckStatic.
func staticELF() []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // 64-bit, little endian, version 1
	le := binary.LittleEndian
	le.PutUint16(h[16:], 2)  // ET_EXEC
	le.PutUint16(h[18:], 62) // EM_X86_64
	le.PutUint32(h[20:], 1)
	le.PutUint16(h[52:], 64) // e_ehsize
	le.PutUint16(h[54:], 56) // e_phentsize
	le.PutUint16(h[58:], 64) // e_shentsize
	return h
}

func TestKubeadmNodeFiles(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "static")
	if err := os.WriteFile(bin, staticELF(), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := KubeadmNode{Kubeadm: bin, Kernelet: bin, CgroupDriver: "systemd"}.Files()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	for _, p := range []string{KubeadmBinary, KerneletBinary} {
		if byPath[p].Host != bin {
			t.Errorf("%s: %+v", p, byPath[p])
		}
	}
	if _, ok := byPath[UpstreamKubelet]; ok {
		t.Error("the real kubelet installed without one given")
	}
	if !strings.Contains(string(byPath[kubeletDropIn].Data), "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS") ||
		!strings.Contains(string(byPath["/etc/systemd/system/"+KubeletUnit].Data), "ExecStart=/usr/bin/kubelet") {
		t.Error("the unit and drop-in are not deploy/kubeadm's")
	}
	if c := string(byPath[ContainerdConfigPath].Data); !strings.Contains(c, "SystemdCgroup = true\n") {
		t.Errorf("containerd config of the systemd node:\n%s", c)
	}
	dyn := filepath.Join(t.TempDir(), "dynamic")
	if err := os.WriteFile(dyn, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := (KubeadmNode{Kubeadm: bin, Kernelet: bin, Kubelet: dyn}).Files(); err == nil || !strings.Contains(err.Error(), UpstreamKubelet) {
		t.Errorf("a kubelet that is not a static binary: %v, want an error naming it", err)
	}
	if UseKubelet(false) != "ln -sfn /usr/local/bin/kernelet /usr/bin/kubelet" || UseKubelet(true) != "ln -sfn /usr/local/bin/kubelet-upstream /usr/bin/kubelet" {
		t.Errorf("UseKubelet: %q %q", UseKubelet(false), UseKubelet(true))
	}
}

func TestNewLink(t *testing.T) {
	// The host has 10.254.0.0/17: links are picked from the other half.
	_, half, _ := net.ParseCIDR("10.254.0.0/17")
	free := netip.MustParsePrefix("10.254.128.0/17")
	for range 50 {
		l, err := newLink([]net.Addr{half})
		if err != nil {
			t.Fatal(err)
		}
		if !free.Contains(l.Host) || l.Guest != l.Host.Next() || l.Host.As4()[3]%4 != 1 || len(l.Tap) > 15 || !strings.HasPrefix(l.Tap, "kltap") {
			t.Fatalf("link %+v, want the 1st and 2nd addresses of a /30 in %v on a kltap* device", l, free)
		}
	}
	_, all, _ := net.ParseCIDR("10.0.0.0/8")
	if l, err := newLink([]net.Addr{all}); err == nil {
		t.Fatalf("link %+v in a range the host has", l)
	}
	l := &Link{Tap: "kltap01", Host: netip.MustParseAddr("10.254.3.5"), Guest: netip.MustParseAddr("10.254.3.6")}
	f := string(l.guestFile().Data)
	if !strings.Contains(f, "MACAddress="+linkMAC+"\n") || !strings.Contains(f, "Address=10.254.3.6/30\n") {
		t.Fatalf("guest network file:\n%s", f)
	}
	if a := strings.Join(l.qemuArgs(), " "); !strings.Contains(a, "tap,id=net1,ifname=kltap01,script=no") {
		t.Fatalf("qemu args %s", a)
	}
}
