package vmnode

import (
	"fmt"

	"github.com/kernelet/kernelet/test/env/images"
)

// Guest paths of a kubeadm node (kubeadm's own, as its packages install
// them, and deploy/kubeadm's unit and drop-in).
const (
	KubeadmBinary = "/usr/bin/kubeadm"
	// KubeletLink is the kubelet kubeadm's drop-in starts: a symlink to
	// KerneletBinary or UpstreamKubelet (KubeadmNode.UseKubelet).
	KubeletLink = "/usr/bin/kubelet"
	// UpstreamKubelet is the real kubelet, beside kernelet.
	UpstreamKubelet = "/usr/local/bin/kubelet-upstream"
	// KubeletUnit is deploy/kubeadm/kubelet.service.
	KubeletUnit   = "kubelet.service"
	kubeletDropIn = "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"
)

// KubeadmNode describes a node prepared as for `kubeadm join`: kubeadm,
// kernelet and (optionally) the real kubelet installed, kubeadm's unit
// and drop-in from deploy/kubeadm (kubelet.service, to be enabled with
// Options.Enable as kubeadm's packages enable it; it restarts until the
// join writes its configuration), containerd with CgroupDriver, and
// /usr/bin/kubelet a link to kernelet.
type KubeadmNode struct {
	// Kubeadm, Kernelet and Kubelet are host paths of static binaries;
	// Kubelet may be empty.
	Kubeadm, Kernelet, Kubelet string
	// CgroupDriver as Kernelet.CgroupDriver; kubeadm's default kubelet
	// configuration says "systemd".
	CgroupDriver string
}

// Files returns the files that install the node's kubeadm and kubelets.
func (k KubeadmNode) Files() ([]File, error) {
	bins := []struct{ host, guest string }{{k.Kubeadm, KubeadmBinary}, {k.Kernelet, KerneletBinary}, {k.Kubelet, UpstreamKubelet}}
	var files []File
	for _, b := range bins {
		if b.host == "" && b.guest == UpstreamKubelet {
			continue
		}
		if err := images.CheckStatic(b.host); err != nil {
			return nil, fmt.Errorf("vmnode: %s (the guest has no Go runtime deps): %w", b.guest, err)
		}
		files = append(files, File{Path: b.guest, Host: b.host})
	}
	unit, err := repoFile("deploy/kubeadm/kubelet.service")
	if err != nil {
		return nil, err
	}
	dropIn, err := repoFile("deploy/kubeadm/10-kubeadm.conf")
	if err != nil {
		return nil, err
	}
	containerd, err := ContainerdConfig(k.CgroupDriver)
	if err != nil {
		return nil, err
	}
	return append(files,
		File{Path: "/etc/systemd/system/" + KubeletUnit, Data: unit},
		File{Path: kubeletDropIn, Data: dropIn},
		File{Path: ContainerdConfigPath, Data: containerd},
	), nil
}

// UseKubelet is the guest script that points KubeletLink at kernelet
// (upstream false) or the real kubelet.
func UseKubelet(upstream bool) string {
	target := KerneletBinary
	if upstream {
		target = UpstreamKubelet
	}
	return fmt.Sprintf("ln -sfn %s %s", target, KubeletLink)
}
