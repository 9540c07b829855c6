package vmnode

import (
	"fmt"
	"os"
	"strings"

	"github.com/kernelet/kernelet/test/env/images"
	"github.com/kernelet/kernelet/test/env/internal/repo"
)

// Guest paths of kernelet in the node.
const (
	KerneletBinary     = "/usr/local/bin/kernelet"
	KerneletConfig     = "/etc/kernelet/config.yaml"
	KerneletKubeconfig = "/etc/kernelet/kubeconfig"
	// KerneletUnit is deploy/kernelet.service, installed as is.
	KerneletUnit = "kernelet.service"
	// kerneletDropIn sets the run's flags (kubeconfig, node name, node IP)
	// the way kubeadm does, without editing the unit.
	kerneletDropIn = "/etc/systemd/system/kernelet.service.d/10-vmnode.conf"
)

// Kernelet describes kernelet installed in a node as the systemd unit of
// deploy/kernelet.service.
type Kernelet struct {
	// Binary is the host path of a static kernelet (make build: bin/kernelet).
	Binary string
	// Config is /etc/kernelet/config.yaml; empty: deploy/config.yaml.
	Config []byte
	// Kubeconfig joins an API server when set; its server must be an
	// address the guest reaches (HostAddr for the host's loopback).
	Kubeconfig []byte
	// NodeName is --hostname-override when set.
	NodeName string
	// ExtraArgs are appended to `kernelet run`.
	ExtraArgs []string
	// CgroupDriver is the node's cgroup driver, "cgroupfs" (the image's,
	// and the default) or "systemd": containerd's SystemdCgroup
	// (ContainerdConfig) and, when Config is empty, deploy/config.yaml's
	// cgroupDriver. A Config given must say the same.
	CgroupDriver string
}

// ContainerdConfigPath is containerd's configuration in the guest.
const ContainerdConfigPath = "/etc/containerd/config.toml"

// ContainerdConfig returns the node's containerd configuration
// (hack/vmnode/rootfs/etc/containerd/config.toml) for a cgroup driver:
// the runc option SystemdCgroup = true for "systemd", as built into the
// image (false) for "cgroupfs".
func ContainerdConfig(driver string) ([]byte, error) {
	b, err := repoFile("hack/vmnode/rootfs" + ContainerdConfigPath)
	if err != nil {
		return nil, err
	}
	return setLine(b, "SystemdCgroup = ", map[string]string{"": "false", "cgroupfs": "false", "systemd": "true"}, driver)
}

// setLine replaces the value after key (the rest of the one line that
// contains it, indentation kept) with values[choice].
func setLine(b []byte, key string, values map[string]string, choice string) ([]byte, error) {
	v, ok := values[choice]
	if !ok {
		return nil, fmt.Errorf("vmnode: cgroup driver %q: want cgroupfs or systemd", choice)
	}
	lines := strings.Split(string(b), "\n")
	n := 0
	for i, l := range lines {
		if j := strings.Index(l, key); j >= 0 && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i] = l[:j+len(key)] + v
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("vmnode: %d lines with %q, want one", n, key)
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// Files returns the files that install kernelet in the node; Options.Enable
// must name KerneletUnit for it to start at boot.
func (k Kernelet) Files() ([]File, error) {
	if err := images.CheckStatic(k.Binary); err != nil {
		return nil, fmt.Errorf("vmnode: kernelet binary (the guest has no Go runtime deps; make build builds it static): %w", err)
	}
	unit, err := repoFile("deploy/kernelet.service")
	if err != nil {
		return nil, err
	}
	cfg := k.Config
	if len(cfg) == 0 {
		if cfg, err = repoFile("deploy/config.yaml"); err != nil {
			return nil, err
		}
		if cfg, err = setLine(cfg, "cgroupDriver: ", map[string]string{"": "cgroupfs", "cgroupfs": "cgroupfs", "systemd": "systemd"}, k.CgroupDriver); err != nil {
			return nil, err
		}
	}
	containerd, err := ContainerdConfig(k.CgroupDriver)
	if err != nil {
		return nil, err
	}
	args := []string{KerneletBinary, "run", "--config", KerneletConfig, "--node-ip", GuestAddr}
	files := []File{
		{Path: KerneletBinary, Host: k.Binary},
		{Path: "/etc/systemd/system/" + KerneletUnit, Data: unit},
		{Path: KerneletConfig, Data: cfg},
		{Path: ContainerdConfigPath, Data: containerd},
	}
	if len(k.Kubeconfig) > 0 {
		files = append(files, File{Path: KerneletKubeconfig, Data: k.Kubeconfig, Mode: 0o600})
		args = append(args, "--kubeconfig", KerneletKubeconfig)
	}
	if k.NodeName != "" {
		args = append(args, "--hostname-override", k.NodeName)
	}
	args = append(args, k.ExtraArgs...)
	for _, a := range args {
		if strings.ContainsAny(a, " \t\n\"'\\%$") {
			return nil, fmt.Errorf("vmnode: kernelet argument %q needs quoting, which the drop-in does not do", a)
		}
	}
	dropIn := "# The run's flags (test/env/vmnode).\n[Service]\nExecStart=\nExecStart=" + strings.Join(args, " ") + "\n"
	files = append(files, File{Path: kerneletDropIn, Data: []byte(dropIn)})
	return files, nil
}

func repoFile(rel string) ([]byte, error) {
	p, err := repo.File(rel)
	if err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("vmnode: %w", err)
	}
	return b, nil
}
