package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"

	"github.com/kernelet/kernelet/internal/clientset"
	"github.com/kernelet/kernelet/internal/promreg"
)

// ClientRotation is rotateCertificates: a Rotator renewing the node's
// client certificate in the cert dir (kubelet-client-*.pem), and the
// client configuration whose transport always presents the current one.
type ClientRotation struct {
	*Rotator
	// Config is the clients' configuration: the server and CA of the
	// kubeconfig, a transport that presents the current certificate, no
	// credentials of its own.
	Config *rest.Config
}

// NewClientRotation starts from base, the kubeconfig's configuration:
// the cert dir's current certificate, else the kubeconfig's client
// certificate (files, or data stored into the cert dir first). The
// rotator is not running; its metrics (ClientMetrics) are registered
// with reg.
func NewClientRotation(base *rest.Config, certDir, nodeName string, reg prometheus.Registerer) (*ClientRotation, error) {
	if base.CertFile == "" && len(base.CertData) == 0 {
		return nil, errors.New("rotateCertificates: the kubeconfig has no client certificate to renew (use --bootstrap-kubeconfig or a client certificate)")
	}
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("cert dir: %w", err)
	}
	anon := rest.AnonymousClientConfig(base)
	tlsBase, err := rest.TLSConfigFor(anon)
	if err != nil {
		return nil, fmt.Errorf("client TLS: %w", err)
	}
	rt := newRotatingTransport(tlsBase)
	cfg := rest.CopyConfig(anon)
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = rt

	store := fileStore{dir: certDir, prefix: ClientPrefix, certFile: base.CertFile, keyFile: base.KeyFile, now: time.Now}
	tmpl := &x509.CertificateRequest{Subject: NodeSubject(nodeName)}
	r := &Rotator{
		name: "client-certificate", store: store, signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages: ClientUsages, template: func() *x509.CertificateRequest { return tmpl },
		client: func() (clientset.CSRClient, error) {
			cs, err := clientset.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			return cs.CertificateSigningRequests(), nil
		},
		onUpdate: func(c *tls.Certificate) { rt.Swap(c) },
		now:      time.Now, uniform: defaultUniform, exitAfter: ExitAfterExpiry,
	}
	if err := r.load(); err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	if r.Current() == nil && base.CertFile == "" {
		// the kubeconfig's data: stored as the first certificate
		c, err := store.Update(base.CertData, base.KeyData)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		r.set(c)
	}
	if r.Current() == nil {
		return nil, fmt.Errorf("rotateCertificates: no client certificate in the kubeconfig or in %s", certDir)
	}
	if err := promreg.Register(reg, ClientMetrics(r)...); err != nil {
		return nil, err
	}
	return &ClientRotation{Rotator: r, Config: cfg}, nil
}
