package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// LocalSocket is the agent's local API under the root dir: /status,
// /pods, /metrics, /configz, /healthz over plain HTTP on a Unix socket
// only its owner (root) may use; `kernelet status` reads it.
const LocalSocket = "kernelet.sock"

// Endpoints are an agent's listeners as the KubeletConfiguration places
// them (address, port, readOnlyPort, healthzBindAddress, healthzPort, the
// TLS fields).
type Endpoints struct {
	Kubelet *kubeletv1beta1.KubeletConfiguration
	// RootDir holds LocalSocket and pki/, the self-signed serving
	// certificate's directory.
	RootDir string
	// NodeName and NodeIPs are the self-signed certificate's names.
	NodeName string
	NodeIPs  []net.IP
	// ServingCertificate, when set, is the secure port's certificate at
	// each handshake (serverTLSBootstrap) instead of tlsCertFile or the
	// self-signed one.
	ServingCertificate func() *tls.Certificate
	// Local is served on the local socket; API on the secure port, behind
	// Guard (authentication and authorization), and the read-only port.
	Local Options
	API   KubeletAPI
	Guard func(http.Handler) http.Handler
}

// ListenEndpoints binds e: the local socket, the secure kubelet API on
// address:port (TLS, Guard), the read-only port when set, and healthz
// when its port is set (Local's checks). The listeners bound before an
// error are returned with it, for the caller to close.
func ListenEndpoints(ctx context.Context, e Endpoints) ([]*Listener, error) {
	kc := e.Kubelet
	tlsCfg, err := TLSConfig(TLSOptions{
		CertFile: kc.TLSCertFile, KeyFile: kc.TLSPrivateKeyFile,
		PKIDir: filepath.Join(e.RootDir, "pki"), Host: e.NodeName, IPs: e.NodeIPs,
		MinVersion: kc.TLSMinVersion, CipherSuites: kc.TLSCipherSuites,
		RequestClientCert: kc.Authentication.X509.ClientCAFile != "",
		Current:           e.ServingCertificate,
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	var out []*Listener
	add := func(l *Listener, err error) error {
		if err != nil {
			return err
		}
		out = append(out, l)
		return nil
	}
	hostPort := func(host string, port int32) string { return net.JoinHostPort(host, strconv.Itoa(int(port))) }
	errs := []error{
		add(ListenUnix(ctx, "local", filepath.Join(e.RootDir, LocalSocket), Handler(e.Local))),
		add(ListenTLS(ctx, "api", hostPort(kc.Address, kc.Port), e.Guard(SecureHandler(e.API)), tlsCfg)),
	}
	if kc.ReadOnlyPort != 0 {
		errs = append(errs, add(Listen(ctx, "read-only", hostPort(kc.Address, kc.ReadOnlyPort), ReadOnlyHandler(e.API))))
	}
	if *kc.HealthzPort != 0 {
		errs = append(errs, add(Listen(ctx, "healthz", hostPort(kc.HealthzBindAddress, *kc.HealthzPort), HealthzHandler(e.Local.Checks))))
	}
	return out, errors.Join(errs...)
}
