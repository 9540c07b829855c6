package podconfig

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// clusterDNSOptions are the resolver options of ClusterFirst pods.
var clusterDNSOptions = []string{"ndots:5"}

// ParseResolvConf reads a resolv.conf the way kubelet does: "nameserver"
// lines accumulate; the last "search" line wins, without "." and with
// trailing dots trimmed; "options" lines merge, a later option of the same
// name replacing an earlier one in place; comments (# and ;) and other
// keywords are ignored. A nameserver line without an address is an error.
func ParseResolvConf(r io.Reader) (*runtimeapi.DNSConfig, error) {
	cfg := &runtimeapi.DNSConfig{Servers: []string{}, Searches: []string{}, Options: []string{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxResolvConfBytes))
	sc.Buffer(make([]byte, 0, 4096), maxResolvConfBytes)
	var errs []error
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, fmt.Errorf("line %d: nameserver without an address", line))
				continue
			}
			cfg.Servers = append(cfg.Servers, f[1])
		case "search":
			cfg.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = mergeOptions(cfg.Options, f[1:])
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("parse resolv.conf: %w", err)
	}
	return cfg, nil
}

func optionName(o string) string {
	name, _, _ := strings.Cut(o, ":")
	return name
}

// mergeOptions adds resolver options ("name" or "name:value"), replacing
// an option of the same name where it stands.
func mergeOptions(options, add []string) []string {
	for _, o := range add {
		if i := slices.IndexFunc(options, func(e string) bool { return optionName(e) == optionName(o) }); i >= 0 {
			options[i] = o
		} else {
			options = append(options, o)
		}
	}
	return options
}

// appendUnique appends the values of add not yet in list.
func appendUnique(list []string, add ...string) []string {
	for _, s := range add {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// dnsKind is how a pod resolves names.
type dnsKind int

const (
	dnsCluster dnsKind = iota
	dnsHost
	dnsNone
)

// podDNSKind maps the DNS policy: ClusterFirstWithHostNet is the cluster;
// ClusterFirst is the cluster, but the host for hostNetwork pods; Default
// is the host; None is nothing but the pod's dnsConfig. An empty policy
// (an undefaulted static pod) is ClusterFirst.
func podDNSKind(pod *v1.Pod) (dnsKind, error) {
	switch pod.Spec.DNSPolicy {
	case v1.DNSClusterFirstWithHostNet:
		return dnsCluster, nil
	case v1.DNSClusterFirst, "":
		if pod.Spec.HostNetwork {
			return dnsHost, nil
		}
		return dnsCluster, nil
	case v1.DNSDefault:
		return dnsHost, nil
	case v1.DNSNone:
		return dnsNone, nil
	}
	return dnsCluster, fmt.Errorf("invalid dnsPolicy %q", pod.Spec.DNSPolicy)
}

// DNSConfig is the resolver configuration of pod's sandbox:
//   - cluster (ClusterFirst, ClusterFirstWithHostNet): the ClusterDNS
//     servers; search <ns>.svc.<domain>, svc.<domain>, <domain> and then the
//     host's search paths; options ndots:5. Without ClusterDNS the pod falls
//     back to Default (warning MissingClusterDNS).
//   - host (Default, and ClusterFirst with hostNetwork): the host's
//     ResolvConf; without one, the loopback resolver and search ".".
//   - None: empty.
//
// The pod's dnsConfig is then merged in (servers and searches appended
// without duplicates, options replacing those of the same name), and the
// result cut to MaxDNSNameservers servers and to the search limits, with a
// DNSConfigForming warning when something was cut.
func DNSConfig(pod *v1.Pod, opts SandboxOptions) (*runtimeapi.DNSConfig, error) {
	warn := opts.Warn
	if warn == nil {
		warn = func(string, string) {}
	}
	kind, err := podDNSKind(pod)
	if err != nil {
		return nil, err
	}
	if kind == dnsCluster && len(opts.ClusterDNS) == 0 {
		warn(ReasonMissingClusterDNS, fmt.Sprintf("pod: %q. kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.",
			podDesc(pod), v1.DNSClusterFirst, v1.DNSDefault))
		kind = dnsHost
	}
	cfg := &runtimeapi.DNSConfig{}
	if kind != dnsNone && opts.ResolvConf != "" {
		f, err := os.Open(opts.ResolvConf)
		if err != nil {
			return nil, fmt.Errorf("pod dns: %w", err)
		}
		cfg, err = ParseResolvConf(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("pod dns: %s: %w", opts.ResolvConf, err)
		}
	}
	switch kind {
	case dnsCluster:
		cfg.Servers = slices.Clone(opts.ClusterDNS)
		if d := opts.ClusterDomain; d != "" {
			cfg.Searches = appendUnique([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, cfg.Searches...)
		}
		cfg.Options = slices.Clone(clusterDNSOptions)
	case dnsHost:
		if opts.ResolvConf == "" {
			cfg.Servers = nil
			for _, ip := range opts.NodeIPs {
				if p := net.ParseIP(ip); p != nil && p.To4() == nil {
					cfg.Servers = appendUnique(cfg.Servers, "::1")
				} else {
					cfg.Servers = appendUnique(cfg.Servers, "127.0.0.1")
				}
			}
			if len(cfg.Servers) == 0 {
				cfg.Servers = []string{"127.0.0.1"}
			}
			cfg.Searches = []string{"."}
		}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = appendUnique(cfg.Servers, dc.Nameservers...)
		cfg.Searches = appendUnique(cfg.Searches, dc.Searches...)
		for _, o := range dc.Options {
			opt := o.Name
			if o.Value != nil && *o.Value != "" {
				opt += ":" + *o.Value
			}
			cfg.Options = mergeOptions(cfg.Options, []string{opt})
		}
	}
	if len(cfg.Servers) > MaxDNSNameservers {
		cfg.Servers = cfg.Servers[:MaxDNSNameservers]
		warn(ReasonDNSConfigForming, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+strings.Join(cfg.Servers, " "))
	}
	if s, cut := fitSearches(cfg.Searches); cut {
		cfg.Searches = s
		warn(ReasonDNSConfigForming, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+strings.Join(s, " "))
	}
	return cfg, nil
}

// fitSearches keeps at most MaxDNSSearchPaths search paths, drops those
// longer than 253 characters, and then drops paths from the end until the
// search line fits MaxDNSSearchListChars.
func fitSearches(in []string) (out []string, cut bool) {
	if len(in) > MaxDNSSearchPaths {
		in, cut = in[:MaxDNSSearchPaths], true
	}
	out = make([]string, 0, len(in))
	for _, s := range in {
		if len(s) > maxDNSSearchLength {
			cut = true
			continue
		}
		out = append(out, s)
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > MaxDNSSearchListChars {
		out, cut = out[:len(out)-1], true
	}
	return out, cut
}

// podDesc is kubelet's way of naming a pod in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
