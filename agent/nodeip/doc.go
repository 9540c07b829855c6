// Package nodeip decides the node's addresses: Parse reads --node-ip (one
// address, or a dual-stack pair), and Detect picks the addresses when none
// are given as kubelet does (the hostname's addresses that belong to this
// host, IPv4 first; else the default route interface's; else 127.0.0.1,
// which the caller warns about). The lookups (resolver, routing table,
// interfaces) come in as Sources, so the decision is tested with values;
// DefaultSources are the real ones. It only reads: it configures no
// address or route.
package nodeip
