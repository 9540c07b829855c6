package certificates

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"

	"github.com/kernelet/kernelet/internal/clientset"
	"github.com/kernelet/kernelet/internal/promreg"
)

// ServingOptions configure serverTLSBootstrap's rotator.
type ServingOptions struct {
	// Client is the node's API client configuration.
	Client *rest.Config
	// CertDir holds kubelet-server-*.pem.
	CertDir  string
	NodeName string
	// Addresses are the node's hostname and IPs at the time of a request
	// (looked up again every minute: a changed address renews the
	// certificate); none yet holds the request back.
	Addresses func() (hostnames []string, ips []net.IP)
	// CertFile and KeyFile are tlsCertFile and tlsPrivateKeyFile: served
	// until the first certificate is issued when set (kubelet's).
	CertFile, KeyFile string
	// Metrics gets the rotator's metrics (ServingMetrics).
	Metrics prometheus.Registerer
}

// NewServingRotator is serverTLSBootstrap's rotator: the serving
// certificate from kubernetes.io/kubelet-serving CSRs naming the node's
// addresses, stored in the cert dir and renewed like the client one. It
// is not running.
func NewServingRotator(o ServingOptions) (*Rotator, error) {
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	cs, err := clientset.NewForConfig(o.Client)
	if err != nil {
		return nil, fmt.Errorf("serving certificate client: %w", err)
	}
	r := &Rotator{
		name:   "serving-certificate",
		store:  fileStore{dir: o.CertDir, prefix: ServingPrefix, certFile: o.CertFile, keyFile: o.KeyFile, now: time.Now},
		signer: certificatesv1.KubeletServingSignerName, usages: ServingUsages,
		template: func() *x509.CertificateRequest {
			hosts, ips := o.Addresses()
			return ServingTemplate(o.NodeName, hosts, ips)
		},
		dynamic: true,
		client:  func() (clientset.CSRClient, error) { return cs.CertificateSigningRequests(), nil },
		now:     time.Now, uniform: defaultUniform,
	}
	if err := r.load(); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := promreg.Register(o.Metrics, ServingMetrics(r)...); err != nil {
		return nil, err
	}
	return r, nil
}

// ServingTemplate is the serving CSR's template: the node's subject with
// the hostnames (those that are IPs as IPs) and IPs as subject alternative
// names, sorted and without duplicates; nil without any.
func ServingTemplate(nodeName string, hostnames []string, ips []net.IP) *x509.CertificateRequest {
	var dns []string
	seen := map[string]bool{}
	var outIPs []net.IP
	addIP := func(ip net.IP) {
		if ip != nil && !seen[ip.String()] {
			seen[ip.String()] = true
			outIPs = append(outIPs, ip)
		}
	}
	for _, h := range hostnames {
		h = strings.TrimSpace(h)
		switch {
		case h == "":
		case net.ParseIP(h) != nil:
			addIP(net.ParseIP(h))
		case !slices.Contains(dns, h):
			dns = append(dns, h)
		}
	}
	for _, ip := range ips {
		addIP(ip)
	}
	if len(dns) == 0 && len(outIPs) == 0 {
		return nil
	}
	slices.Sort(dns)
	slices.SortFunc(outIPs, func(a, b net.IP) int { return strings.Compare(a.String(), b.String()) })
	return &x509.CertificateRequest{Subject: NodeSubject(nodeName), DNSNames: dns, IPAddresses: outIPs}
}
