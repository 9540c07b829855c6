package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// hostnamePod is a static pod on the pod network whose container copies
// the kernel hostname it sees and its /etc/hosts to hostDir/<name>.
func hostnamePod(name, specLines, hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, namespace: default}
spec:
%[2]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[3]s
    imagePullPolicy: IfNotPresent
    command: ["/bin/sh", "-c", "cat /proc/sys/kernel/hostname > /host/%[1]s.hostname; cp /etc/hosts /host/%[1]s.hosts; echo ok > /host/%[1]s.done; exec sleep 3600"]
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - {name: host, hostPath: {path: %[4]s, type: DirectoryOrCreate}}
`, name, specLines, images.TestboxImage, hostDir)
}

// The pod's hostname as kubelet v1.37 gives it (the upstream "Override
// hostname of Pod" specs): spec.hostnameOverride is the hostname as given,
// dots included, and with it the subdomain gives no FQDN line in
// /etc/hosts; without it, hostname + subdomain give
// <hostname>.<subdomain>.<namespace>.svc.<clusterDomain> in /etc/hosts, and
// setHostnameAsFQDN makes that the kernel hostname.
func TestAgentHostnames(t *testing.T) {
	cd := containerd.Shared(t)
	n, _, _ := newAgentWithCleanup(t, cd)
	hostDir := filepath.Join(t.TempDir(), "out")
	// The node's config with a cluster domain (appended: the last value wins).
	f, err := os.OpenFile(n.cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("clusterDomain: cluster.local\n")
	if err = errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, spec, hostname, hostsLine string
	}{
		{"override-dots", "  hostnameOverride: override.example.host", "override.example.host", "\toverride.example.host\n"},
		{"override-subdomain", "  hostname: custom-host\n  subdomain: t\n  hostnameOverride: override-host", "override-host", "\toverride-host\n"},
		{"subdomain", "  hostname: custom-host\n  subdomain: t", "custom-host", "\tcustom-host.t.default.svc.cluster.local\tcustom-host\n"},
		{"fqdn", "  subdomain: t\n  setHostnameAsFQDN: true", "fqdn-" + n.node + ".t.default.svc.cluster.local",
			"\tfqdn-" + n.node + ".t.default.svc.cluster.local\tfqdn-" + n.node + "\n"},
	}
	var names []string
	for _, tc := range cases {
		writeManifest(t, n.manifests, tc.name+".yaml", hostnamePod(tc.name, tc.spec, hostDir))
		names = append(names, tc.name)
	}
	n.start(t)
	n.waitRunning(t, 90*time.Second, names...)
	for _, tc := range cases {
		waitFile(t, n, filepath.Join(hostDir, tc.name+".done"), 30*time.Second)
		got, _ := os.ReadFile(filepath.Join(hostDir, tc.name+".hostname"))
		if strings.TrimSpace(string(got)) != tc.hostname {
			t.Errorf("%s: kernel hostname %q, want %q", tc.name, strings.TrimSpace(string(got)), tc.hostname)
		}
		hosts, _ := os.ReadFile(filepath.Join(hostDir, tc.name+".hosts"))
		lines := strings.SplitAfter(string(hosts), "\n")
		last := lines[len(lines)-2] // the pod IP's line ends the file (no hostAliases)
		if !strings.HasSuffix(last, tc.hostsLine) || strings.Count(last, "\t") != strings.Count(tc.hostsLine, "\t") {
			t.Errorf("%s: /etc/hosts ends with %q, want <pod IP>%q\n%s", tc.name, last, tc.hostsLine, hosts)
		}
	}
	if !t.Failed() {
		t.Logf("hostnames: %d static pods on the pod network got kubelet v1.37's hostname and /etc/hosts line", len(cases))
	}
}
