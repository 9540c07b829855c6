package nodeip

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Parse parses --node-ip: one address, or two of different families
// separated by a comma (dual stack, primary first). An unspecified address
// (0.0.0.0, ::) asks for detection, as an empty value does.
func Parse(s string) ([]net.IP, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return nil, errors.New("at most two addresses (one IPv4, one IPv6)")
	}
	var out []net.IP
	for _, p := range parts {
		ip := net.ParseIP(strings.TrimSpace(p))
		if ip == nil {
			return nil, fmt.Errorf("%q is not an IP address", strings.TrimSpace(p))
		}
		if ip.IsUnspecified() {
			if len(parts) > 1 {
				return nil, errors.New("an unspecified address cannot be part of a pair")
			}
			return nil, nil
		}
		out = append(out, ip)
	}
	if len(out) == 2 && (out[0].To4() != nil) == (out[1].To4() != nil) {
		return nil, errors.New("two addresses must be of different families")
	}
	return out, nil
}

// Sources are where Detect looks when no address is given.
type Sources struct {
	// Lookup resolves a host name (net.DefaultResolver.LookupIP).
	Lookup func(ctx context.Context, host string) ([]net.IP, error)
	// DefaultRouteIP is the address of the interface of the default route.
	DefaultRouteIP func() (net.IP, error)
	// LocalIPs are the addresses of this host's interfaces; nil skips the
	// check that a resolved address is one of them.
	LocalIPs func() ([]net.IP, error)
}

// DefaultSources resolve through the system resolver and read the
// routing table and the interfaces.
func DefaultSources() Sources {
	return Sources{
		Lookup: func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		},
		DefaultRouteIP: utilnet.ChooseHostInterface,
		LocalIPs:       LocalIPs,
	}
}

// LocalIPs are the addresses of this host's network interfaces.
func LocalIPs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("interface addresses: %w", err)
	}
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			out = append(out, n.IP)
		}
	}
	return out, nil
}

// NotLocal returns the addresses of ips that are not in local.
func NotLocal(ips, local []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if !slices.ContainsFunc(local, ip.Equal) {
			out = append(out, ip)
		}
	}
	return out
}

// Detect decides the node's addresses, primary first: the given ones;
// else an address hostname resolves to that is usable from elsewhere (not
// loopback, link-local or unspecified) and belongs to this host, IPv4
// first, as kubelet picks it; else the default route interface's address;
// else 127.0.0.1 (from "fallback": the caller warns). It also says where
// the answer came from, for the log.
func Detect(ctx context.Context, given []net.IP, hostname string, src Sources) (ips []string, from string) {
	if len(given) > 0 {
		for _, ip := range given {
			ips = append(ips, ip.String())
		}
		return ips, "--node-ip"
	}
	if hostname != "" && src.Lookup != nil {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		addrs, err := src.Lookup(lctx, hostname)
		cancel()
		var local []net.IP
		if err == nil && src.LocalIPs != nil {
			local, err = src.LocalIPs()
		}
		if err == nil {
			var v6 net.IP
			for _, ip := range addrs {
				if !usable(ip) || src.LocalIPs != nil && len(NotLocal([]net.IP{ip}, local)) > 0 {
					continue
				}
				if ip.To4() != nil {
					return []string{ip.String()}, "hostname " + hostname
				}
				if v6 == nil {
					v6 = ip
				}
			}
			if v6 != nil {
				return []string{v6.String()}, "hostname " + hostname
			}
		}
	}
	if src.DefaultRouteIP != nil {
		if ip, err := src.DefaultRouteIP(); err == nil && usable(ip) {
			return []string{ip.String()}, "default route"
		}
	}
	return []string{"127.0.0.1"}, "fallback"
}

func usable(ip net.IP) bool {
	return ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() && !ip.IsLinkLocalUnicast() && !ip.IsMulticast()
}

// IPs are the addresses of ss (Detect's answer) that parse.
func IPs(ss []string) []net.IP {
	var out []net.IP
	for _, s := range ss {
		if ip := net.ParseIP(s); ip != nil {
			out = append(out, ip)
		}
	}
	return out
}
