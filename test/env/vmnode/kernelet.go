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
	}
	args := []string{KerneletBinary, "run", "--config", KerneletConfig, "--node-ip", GuestAddr}
	files := []File{
		{Path: KerneletBinary, Host: k.Binary},
		{Path: "/etc/systemd/system/" + KerneletUnit, Data: unit},
		{Path: KerneletConfig, Data: cfg},
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
