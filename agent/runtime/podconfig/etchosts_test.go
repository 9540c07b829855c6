package podconfig

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEtcHosts(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo", "bar"}}}
	cases := map[string]struct {
		spec v1.PodSpec
		want string
	}{
		"pod network": {spec: v1.PodSpec{}, want: managedHosts + "10.0.0.5\tweb\n"},
		"subdomain and aliases": {spec: v1.PodSpec{Hostname: "h", Subdomain: "sub", HostAliases: aliases},
			want: managedHosts + "10.0.0.5\th.sub.team.svc.cluster.local\th\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tbar\n"},
		"hostnameOverride has no domain": {spec: v1.PodSpec{Hostname: "h", Subdomain: "sub", HostnameOverride: ptr("override.example.host")},
			want: managedHosts + "10.0.0.5\toverride.example.host\n"},
		"host network": {spec: v1.PodSpec{HostNetwork: true, HostAliases: aliases},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1 node\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo\tbar\n"},
	}
	for name, tc := range cases {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team"}, Spec: tc.spec}
		got, err := EtcHosts(pod, []string{"10.0.0.5"}, "cluster.local", []byte("127.0.0.1 node\n"))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: EtcHosts =\n%s(%v)\nwant\n%s", name, got, err, tc.want)
		}
	}
}
