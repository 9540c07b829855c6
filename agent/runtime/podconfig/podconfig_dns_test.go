package podconfig

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const fixtures = "testdata/podconfig/"

func TestParseResolvConf(t *testing.T) {
	cases := map[string]struct {
		file    string
		want    *runtimeapi.DNSConfig
		wantErr string
	}{
		"host": {file: "resolv-host.conf", want: &runtimeapi.DNSConfig{
			Servers:  []string{"192.0.2.53", "192.0.2.54"},
			Searches: []string{"corp.example", "lab.example"},
			Options:  []string{"ndots:1", "timeout:3", "attempts:4"},
		}},
		"last search line wins": {file: "resolv-two-search.conf", want: &runtimeapi.DNSConfig{
			Servers: []string{"10.0.0.1"}, Searches: []string{"second.example", "third.example"}, Options: []string{},
		}},
		"empty":                         {file: "resolv-empty.conf", want: &runtimeapi.DNSConfig{Servers: []string{}, Searches: []string{}, Options: []string{}}},
		"nameserver without an address": {file: "resolv-bad.conf", wantErr: "line 2: nameserver without an address"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(fixtures + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseResolvConf(f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertDNS(t, got, tc.want)
		})
	}
}

func assertDNS(t *testing.T, got, want *runtimeapi.DNSConfig) {
	t.Helper()
	if !slices.Equal(got.GetServers(), want.GetServers()) || !slices.Equal(got.GetSearches(), want.GetSearches()) || !slices.Equal(got.GetOptions(), want.GetOptions()) {
		t.Errorf("dns =\n servers %q searches %q options %q\nwant\n servers %q searches %q options %q",
			got.GetServers(), got.GetSearches(), got.GetOptions(), want.GetServers(), want.GetSearches(), want.GetOptions())
	}
}

func TestDNSConfig(t *testing.T) {
	host := &runtimeapi.DNSConfig{
		Servers:  []string{"192.0.2.53", "192.0.2.54"},
		Searches: []string{"corp.example", "lab.example"},
		Options:  []string{"ndots:1", "timeout:3", "attempts:4"},
	}
	cluster := &runtimeapi.DNSConfig{
		Servers:  []string{"10.96.0.10"},
		Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "lab.example"},
		Options:  []string{"ndots:5"},
	}
	base := SandboxOptions{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: fixtures + "resolv-host.conf"}
	withOpts := func(f func(o *SandboxOptions)) SandboxOptions {
		o := base
		o.ClusterDNS = slices.Clone(base.ClusterDNS)
		f(&o)
		return o
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("s%d.example", i)
	}
	long := strings.Repeat("a", 254)
	// 20 searches of 120 characters: 2419 characters on one line, so the
	// last 4 go (16·121 − 1 = 1935 ≤ 2048 < 17·121 − 1 = 2056).
	wide := make([]string, 20)
	for i := range wide {
		wide[i] = fmt.Sprintf("%03d%s", i, strings.Repeat("w", 117))
	}
	cases := map[string]struct {
		policy      v1.DNSPolicy
		hostNetwork bool
		dnsConfig   *v1.PodDNSConfig
		opts        SandboxOptions
		want        *runtimeapi.DNSConfig
		warnings    []string // reasons
		wantErr     string
	}{
		"ClusterFirst":                             {policy: v1.DNSClusterFirst, opts: base, want: cluster},
		"empty policy is ClusterFirst":             {policy: "", opts: base, want: cluster},
		"ClusterFirst on the host network is host": {policy: v1.DNSClusterFirst, hostNetwork: true, opts: base, want: host},
		"ClusterFirstWithHostNet":                  {policy: v1.DNSClusterFirstWithHostNet, hostNetwork: true, opts: base, want: cluster},
		"Default":                                  {policy: v1.DNSDefault, opts: base, want: host},
		"cluster without a domain keeps host searches": {policy: v1.DNSClusterFirst, opts: withOpts(func(o *SandboxOptions) { o.ClusterDomain = "" }),
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"corp.example", "lab.example"}, Options: []string{"ndots:5"}}},
		"cluster without clusterDNS falls back to host": {policy: v1.DNSClusterFirst, opts: withOpts(func(o *SandboxOptions) { o.ClusterDNS = nil }),
			want: host, warnings: []string{ReasonMissingClusterDNS}},
		"None is the pod's dnsConfig only": {policy: v1.DNSNone,
			dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("3")}, {Name: "edns0"}}},
			opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = fixtures + "does-not-exist" }), // not read
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"ndots:3", "edns0"}}},
		"dnsConfig merges into cluster": {policy: v1.DNSClusterFirst,
			dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "8.8.8.8"}, Searches: []string{"svc.cluster.local", "extra.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "single-request"}, {Name: "timeout", Value: ptr("")}}},
			opts: base,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "8.8.8.8"},
				Searches: append(slices.Clone(cluster.Searches), "extra.example"), Options: []string{"ndots:2", "single-request", "timeout"}}},
		"no resolv.conf: loopback resolver": {policy: v1.DNSDefault, opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = "" }),
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		"no resolv.conf, dual-stack node": {policy: v1.DNSDefault, opts: withOpts(func(o *SandboxOptions) {
			o.ResolvConf, o.NodeIPs = "", []string{"192.0.2.10", "2001:db8::10", "192.0.2.11"}
		}), want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1", "::1"}, Searches: []string{"."}}},
		"no resolv.conf, cluster keeps no host searches": {policy: v1.DNSClusterFirst, opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = "" }),
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}}},
		"more than 3 nameservers are cut": {policy: v1.DNSDefault, opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = fixtures + "resolv-many.conf" }),
			want:     &runtimeapi.DNSConfig{Servers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, Searches: []string{"example.org"}},
			warnings: []string{ReasonDNSConfigForming}},
		"more than 32 searches are cut": {policy: v1.DNSNone, dnsConfig: &v1.PodDNSConfig{Searches: many}, opts: base,
			want: &runtimeapi.DNSConfig{Searches: many[:32]}, warnings: []string{ReasonDNSConfigForming}},
		"search longer than 253 is dropped": {policy: v1.DNSNone, dnsConfig: &v1.PodDNSConfig{Searches: []string{"a.example", long, "b.example"}}, opts: base,
			want: &runtimeapi.DNSConfig{Searches: []string{"a.example", "b.example"}}, warnings: []string{ReasonDNSConfigForming}},
		"search line over 2048 characters is cut from the end": {policy: v1.DNSNone, dnsConfig: &v1.PodDNSConfig{Searches: wide}, opts: base,
			want: &runtimeapi.DNSConfig{Searches: wide[:16]}, warnings: []string{ReasonDNSConfigForming}},
		"unreadable resolv.conf": {policy: v1.DNSDefault, opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = fixtures + "resolv-bad.conf" }), wantErr: "nameserver without an address"},
		"missing resolv.conf":    {policy: v1.DNSDefault, opts: withOpts(func(o *SandboxOptions) { o.ResolvConf = fixtures + "nope.conf" }), wantErr: "no such file"},
		"invalid policy":         {policy: "Sometimes", opts: base, wantErr: `invalid dnsPolicy "Sometimes"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "u1"},
				Spec: v1.PodSpec{DNSPolicy: tc.policy, HostNetwork: tc.hostNetwork, DNSConfig: tc.dnsConfig}}
			var warnings []string
			var messages []string
			opts := tc.opts
			opts.Warn = func(reason, msg string) { warnings = append(warnings, reason); messages = append(messages, msg) }
			got, err := DNSConfig(pod, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			assertDNS(t, got, tc.want)
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings = %q (%q), want %q", warnings, messages, tc.warnings)
			}
		})
	}
}

func TestDNSWarningTexts(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "u1"}}
	var got []string
	_, err := DNSConfig(pod, SandboxOptions{ResolvConf: fixtures + "resolv-many.conf", Warn: func(_, m string) { got = append(got, m) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`pod: "web_team(u1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`,
		"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings =\n %q\nwant\n %q", got, want)
	}
}
