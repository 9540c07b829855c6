package nodeip

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want []string
		ok   bool
	}{
		"empty":            {"", nil, true},
		"one":              {"192.0.2.7", []string{"192.0.2.7"}, true},
		"dual stack":       {"192.0.2.7, 2001:db8::7", []string{"192.0.2.7", "2001:db8::7"}, true},
		"unspecified":      {"0.0.0.0", nil, true},
		"not an address":   {"node-1", nil, false},
		"same family":      {"192.0.2.7,192.0.2.8", nil, false},
		"three":            {"192.0.2.7,2001:db8::7,192.0.2.8", nil, false},
		"unspecified pair": {"0.0.0.0,2001:db8::7", nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			var s []string
			for _, ip := range got {
				s = append(s, ip.String())
			}
			if !slices.Equal(s, tc.want) {
				t.Errorf("= %v, want %v", s, tc.want)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	lookup := func(addrs ...string) func(context.Context, string) ([]net.IP, error) {
		return func(context.Context, string) ([]net.IP, error) {
			if addrs == nil {
				return nil, errors.New("no such host")
			}
			var out []net.IP
			for _, a := range addrs {
				out = append(out, net.ParseIP(a))
			}
			return out, nil
		}
	}
	route := func(ip string) func() (net.IP, error) {
		return func() (net.IP, error) {
			if ip == "" {
				return nil, errors.New("no default route")
			}
			return net.ParseIP(ip), nil
		}
	}
	local := func(addrs ...string) func() ([]net.IP, error) {
		return func() ([]net.IP, error) {
			var out []net.IP
			for _, a := range addrs {
				out = append(out, net.ParseIP(a))
			}
			return out, nil
		}
	}
	for name, tc := range map[string]struct {
		given []net.IP
		src   Sources
		want  string
		from  string
	}{
		"given wins":                  {[]net.IP{net.ParseIP("198.51.100.1")}, Sources{Lookup: lookup("192.0.2.5"), DefaultRouteIP: route("192.0.2.2")}, "198.51.100.1", "--node-ip"},
		"hostname resolves":           {nil, Sources{Lookup: lookup("192.0.2.5"), DefaultRouteIP: route("192.0.2.2")}, "192.0.2.5", "hostname node"},
		"hostname is loopback":        {nil, Sources{Lookup: lookup("127.0.0.1", "::1"), DefaultRouteIP: route("192.0.2.2")}, "192.0.2.2", "default route"},
		"link-local skipped":          {nil, Sources{Lookup: lookup("fe80::1", "192.0.2.9"), DefaultRouteIP: route("192.0.2.2")}, "192.0.2.9", "hostname node"},
		"unresolvable, default route": {nil, Sources{Lookup: lookup(), DefaultRouteIP: route("192.0.2.2")}, "192.0.2.2", "default route"},
		"nothing at all":              {nil, Sources{Lookup: lookup(), DefaultRouteIP: route("")}, "127.0.0.1", "fallback"},
		"IPv4 first":                  {nil, Sources{Lookup: lookup("2001:db8::10", "192.0.2.10"), DefaultRouteIP: route("192.0.2.2")}, "192.0.2.10", "hostname node"},
		"IPv6 when alone":             {nil, Sources{Lookup: lookup("2001:db8::10"), DefaultRouteIP: route("192.0.2.2")}, "2001:db8::10", "hostname node"},
		"not this host's":             {nil, Sources{Lookup: lookup("203.0.113.7"), DefaultRouteIP: route("192.0.2.2"), LocalIPs: local("192.0.2.2")}, "192.0.2.2", "default route"},
		"this host's":                 {nil, Sources{Lookup: lookup("203.0.113.7", "192.0.2.2"), DefaultRouteIP: route("192.0.2.9"), LocalIPs: local("192.0.2.2")}, "192.0.2.2", "hostname node"},
	} {
		t.Run(name, func(t *testing.T) {
			ips, from := Detect(context.Background(), tc.given, "node", tc.src)
			if len(ips) != 1 || ips[0] != tc.want || from != tc.from {
				t.Errorf("= %v from %q, want %s from %q", ips, from, tc.want, tc.from)
			}
		})
	}
}

func TestIPs(t *testing.T) {
	got := IPs([]string{"10.0.0.1", "not an ip", "fd00::1"})
	if len(got) != 2 || got[0].String() != "10.0.0.1" || got[1].String() != "fd00::1" {
		t.Errorf("IPs = %v, want [10.0.0.1 fd00::1]", got)
	}
}
