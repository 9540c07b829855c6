package podconfig

import (
	"bytes"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// EtcHostsPath is where a container sees the pod's managed hosts file.
const EtcHostsPath = "/etc/hosts"

// EtcHostsFile is the name of the managed hosts file in the pod directory.
const EtcHostsFile = "etc-hosts"

// managedHosts are the fixed entries of a managed hosts file, kubelet's.
const managedHosts = `# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
`

// EtcHosts is the content of the hosts file kubelet manages for pod:
// for host-network pods the node's hosts file (nodeHosts) under a header;
// else localhost entries and one line per pod IP with the pod's short
// hostname, preceded by <hostname>.<domain> when PodHostnameAndDomain gives
// a domain (a subdomain and no hostnameOverride); then the pod's
// hostAliases.
func EtcHosts(pod *v1.Pod, podIPs []string, clusterDomain string, nodeHosts []byte) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(nodeHosts)
	} else {
		hostname, domain, err := PodHostnameAndDomain(pod, clusterDomain)
		if err != nil {
			return nil, err
		}
		b.WriteString(managedHosts)
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes(), nil
}

// mountsEtcHosts tells whether c mounts something at /etc/hosts itself.
func mountsEtcHosts(c *v1.Container) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == EtcHostsPath {
			return true
		}
	}
	return false
}
