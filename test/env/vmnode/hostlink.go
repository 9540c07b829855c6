package vmnode

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
)

// Link is the node's second network interface (Options.HostLink): a
// point-to-point /30 between a tap device on the host and the guest, so
// the host reaches the guest's ports (the kubelet API on 10250) directly,
// as a control plane reaches its nodes.
type Link struct {
	// Tap is the host's tap device. qemu creates it when it starts and
	// the kernel removes it when qemu exits (it is not persistent), so
	// nothing is left behind even when the test dies.
	Tap string
	// Host and Guest are the two ends' addresses (prefix length 30).
	Host, Guest netip.Addr
}

// linkMAC is the guest's MAC address on the link; the guest's networkd
// matches it (the user-mode NIC takes every other e* interface).
const linkMAC = "52:54:00:6b:6c:01"

// linkNetworkPath is the guest's networkd file of the link: it sorts
// before the image's 10-slirp.network, so it wins for the link's NIC.
const linkNetworkPath = "/etc/systemd/network/05-kernelet-hostlink.network"

// linkRange is where links are picked: 10.254.0.0/16, one /30 each, clear
// of the guest's own ranges (10.0.2.0/24, pods 10.88.0.0/16, services
// 10.0.0.0/24).
var linkRange = netip.MustParsePrefix("10.254.0.0/16")

// newLink picks a link: a random /30 of linkRange that overlaps none of
// the host's interface addresses, and a tap name of its own.
func newLink(hostAddrs []net.Addr) (*Link, error) {
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("vmnode: link: %w", err)
	}
	base := linkRange.Addr().As4()
	for range 64 {
		n, err := rand.Int(rand.Reader, big.NewInt(1<<14)) // the /30s of a /16
		if err != nil {
			return nil, fmt.Errorf("vmnode: link: %w", err)
		}
		i := n.Int64() * 4
		a := base
		a[2], a[3] = byte(i>>8), byte(i)
		subnet := netip.PrefixFrom(netip.AddrFrom4(a), 30)
		if overlapsAny(subnet, hostAddrs) {
			continue
		}
		host := subnet.Addr().Next()
		return &Link{Tap: "kltap" + hex.EncodeToString(id), Host: host, Guest: host.Next()}, nil
	}
	return nil, errors.New("vmnode: link: no free /30 in " + linkRange.String())
}

// overlapsAny tells whether subnet overlaps the network of one of addrs.
func overlapsAny(subnet netip.Prefix, addrs []net.Addr) bool {
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ones, _ := ipn.Mask.Size()
		if netip.PrefixFrom(ip.Unmap(), ones).Masked().Overlaps(subnet) {
			return true
		}
	}
	return false
}

// qemuArgs are the link's qemu arguments: a tap netdev (no scripts: the
// host end is configured by configureLink) and its virtio NIC.
func (l *Link) qemuArgs() []string {
	return []string{
		"-netdev", "tap,id=net1,ifname=" + l.Tap + ",script=no,downscript=no",
		"-device", "virtio-net-device,netdev=net1,mac=" + linkMAC,
	}
}

// guestFile is the guest's networkd configuration of the link.
func (l *Link) guestFile() File {
	return File{Path: linkNetworkPath, Data: fmt.Appendf(nil, `# kernelet's test node: the link to the host's %s (test/env/vmnode).
[Match]
MACAddress=%s

[Network]
Address=%s/30
LinkLocalAddressing=no
IPv6AcceptRA=no
`, l.Tap, linkMAC, l.Guest)}
}
