package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/renameio/v2/maybe"
	cliflag "k8s.io/component-base/cli/flag"
)

// Self-signed serving certificate files, under TLSOptions.PKIDir.
const (
	SelfSignedCertFile = "kernelet.crt"
	SelfSignedKeyFile  = "kernelet.key"
)

// TLSOptions configure the secure port's TLS.
type TLSOptions struct {
	// CertFile and KeyFile are tlsCertFile and tlsPrivateKeyFile; both
	// empty: a self-signed certificate under PKIDir.
	CertFile, KeyFile string
	// PKIDir holds the self-signed certificate and key (<root-dir>/pki).
	PKIDir string
	// Host and IPs are the self-signed certificate's subject alternative
	// names: the node name and the node's addresses.
	Host string
	IPs  []net.IP
	// MinVersion and CipherSuites are tlsMinVersion and tlsCipherSuites
	// (Go's defaults when empty).
	MinVersion   string
	CipherSuites []string
	// RequestClientCert asks clients for a certificate (x509 client
	// authentication verifies it against the client CA).
	RequestClientCert bool
	// Current, when set, is the serving certificate at each handshake
	// (serverTLSBootstrap's rotating certificate; nil while none is
	// issued) instead of the files or the self-signed one.
	Current func() *tls.Certificate
}

// errNoServingCert fails a handshake while serverTLSBootstrap's first
// certificate is not issued (kubelet's message).
var errNoServingCert = errors.New("no serving certificate available for the kubelet")

// TLSConfig builds the secure port's TLS configuration: o.Current's
// certificate (serverTLSBootstrap), the configured
// certificate, or the self-signed one in PKIDir — reused across restarts
// while it names Host and every IP and has 30 days left, written anew
// otherwise. HTTP/2 and
// HTTP/1.1 are offered (upgrades to SPDY or WebSocket use HTTP/1.1).
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	getCert, err := servingCertificate(o)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{
		GetCertificate: getCert,
		NextProtos:     []string{"h2", "http/1.1"},
		MinVersion:     tls.VersionTLS12,
	}
	if o.MinVersion != "" {
		if c.MinVersion, err = cliflag.TLSVersion(o.MinVersion); err != nil {
			return nil, fmt.Errorf("tlsMinVersion: %w", err)
		}
	}
	if len(o.CipherSuites) > 0 {
		if c.CipherSuites, err = cliflag.TLSCipherSuites(o.CipherSuites); err != nil {
			return nil, fmt.Errorf("tlsCipherSuites: %w", err)
		}
	}
	if o.RequestClientCert {
		c.ClientAuth = tls.RequestClientCert
	}
	return c, nil
}

// servingCertificate is the handshake's certificate source: o.Current,
// else the configured files, else the self-signed pair.
func servingCertificate(o TLSOptions) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), error) {
	if o.Current != nil {
		return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := o.Current(); c != nil {
				return c, nil
			}
			return nil, errNoServingCert
		}, nil
	}
	certFile, keyFile := o.CertFile, o.KeyFile
	if certFile == "" && keyFile == "" {
		var err error
		if certFile, keyFile, err = EnsureSelfSigned(o.PKIDir, o.Host, o.IPs); err != nil {
			return nil, err
		}
	}
	kp, err := newKeyPairFiles(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return kp.get, nil
}

// EnsureSelfSigned returns the self-signed certificate and key files in
// dir, writing them when missing, unreadable or not naming host and every
// ip.
func EnsureSelfSigned(dir, host string, ips []net.IP) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, SelfSignedCertFile), filepath.Join(dir, SelfSignedKeyFile)
	if CertCovers(certFile, keyFile, host, ips) {
		return certFile, keyFile, nil
	}
	if host == "" {
		return "", "", errors.New("self-signed certificate: no node name")
	}
	certPEM, keyPEM, err := selfSigned(host, ips, time.Now())
	if err != nil {
		return "", "", fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("self-signed certificate: %w", err)
	}
	if err := writeAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeAtomic(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// keyPairFiles serves a certificate and key from files, loading them again
// when either file changes (checked at most once a second, at a
// handshake), so that a renewed tlsCertFile/tlsPrivateKeyFile is used
// without a restart. A pair that does not load keeps the previous one.
type keyPairFiles struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string // the files' sizes and modification times
	checked time.Time
}

func newKeyPairFiles(certFile, keyFile string) (*keyPairFiles, error) {
	k := &keyPairFiles{certFile: certFile, keyFile: keyFile}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	k.cert, k.stamp, k.checked = &cert, k.fileStamp(), time.Now()
	return k, nil
}

func (k *keyPairFiles) fileStamp() string {
	var b strings.Builder
	for _, f := range []string{k.certFile, k.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d/%d;", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

func (k *keyPairFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Since(k.checked) < time.Second {
		return k.cert, nil
	}
	k.checked = time.Now()
	if st := k.fileStamp(); st != k.stamp {
		if cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile); err == nil {
			k.cert, k.stamp = &cert, st
		}
	}
	return k.cert, nil
}

// selfSignedValidity is how long a self-signed certificate is valid; it is
// written anew when less than selfSignedRenew is left.
const (
	selfSignedValidity = 365 * 24 * time.Hour
	selfSignedRenew    = 30 * 24 * time.Hour
)

// selfSigned makes a self-signed serving certificate for host and ips with
// an ECDSA P-256 key (a TLS handshake signs with it: far cheaper than RSA,
// which counts when every exec is a new connection).
func selfSigned(host string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           ips,
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// CertCovers reports whether the key pair loads and its leaf certificate
// is valid for host and every ip, for more than selfSignedRenew.
func CertCovers(certFile, keyFile, host string, ips []net.IP) bool {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil || len(pair.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || time.Until(leaf.NotAfter) < selfSignedRenew {
		return false
	}
	if host != "" && leaf.VerifyHostname(host) != nil {
		return false
	}
	for _, ip := range ips {
		if leaf.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	return true
}

// writeAtomic replaces path with data through a temporary file that is
// fsynced and renamed: a full disk or a crash leaves the old file or none.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := maybe.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
