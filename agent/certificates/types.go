package certificates

import (
	"path/filepath"
	"time"
)

// File name prefixes of the certificate stores in the cert dir, kubelet's:
// <prefix>-<date>.pem and the <prefix>-current.pem symlink.
const (
	ClientPrefix  = "kubelet-client"
	ServingPrefix = "kubelet-server"
)

// BootstrapTimeout bounds the wait for the bootstrap CSR to be approved
// and issued (kubelet's hour).
const BootstrapTimeout = time.Hour

// tmpKeyFile holds the bootstrap private key while its CSR is pending, so
// that a restart sends the same request again (kubelet's name).
const tmpKeyFile = "kubelet-client.key.tmp"

// Options are the flags of the TLS bootstrap.
type Options struct {
	// Kubeconfig is --kubeconfig: read when usable, written otherwise.
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig: the credentials
	// that request the client certificate ("" disables the bootstrap).
	BootstrapKubeconfig string
	// CertDir is --cert-dir (default DefaultCertDir).
	CertDir string
	// NodeName is the node's name, the certificate's system:node:<name>.
	NodeName string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultCertDir is kubelet's --cert-dir default: <root-dir>/pki.
func DefaultCertDir(rootDir string) string { return filepath.Join(rootDir, "pki") }

// CurrentPath is the current certificate and key of the store with
// prefix in certDir (kubelet-client-current.pem, kubelet-server-current.pem).
func CurrentPath(certDir, prefix string) string {
	return filepath.Join(certDir, prefix+"-current.pem")
}
