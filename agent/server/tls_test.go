package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEnsureSelfSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ips := []net.IP{net.ParseIP("10.0.0.7"), net.ParseIP("fd00::7")}
	cert, key, err := EnsureSelfSigned(dir, "node-a", ips)
	if err != nil {
		t.Fatal(err)
	}
	if !CertCovers(cert, key, "node-a", ips) {
		t.Fatal("the new certificate does not cover the node")
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v %v", fi.Mode(), err)
	}
	first, _ := os.ReadFile(cert)
	// Reused while it names the node and its IPs.
	if _, _, err := EnsureSelfSigned(dir, "node-a", ips[:1]); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(cert); string(again) != string(first) {
		t.Error("a certificate that still covers the node was replaced")
	}
	// A new address: written anew.
	more := append(ips, net.ParseIP("10.0.0.8"))
	if _, _, err := EnsureSelfSigned(dir, "node-a", more); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(cert); string(again) == string(first) || !CertCovers(cert, key, "node-a", more) {
		t.Error("a certificate that lacks an address was kept")
	}
	cfg, err := TLSConfig(TLSOptions{PKIDir: dir, Host: "node-a", IPs: more, MinVersion: "VersionTLS13", RequestClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS13 || cfg.ClientAuth != tls.RequestClientCert || cfg.GetCertificate == nil {
		t.Errorf("config %+v", cfg)
	}
	if _, err := TLSConfig(TLSOptions{PKIDir: dir, Host: "node-a", MinVersion: "TLS9"}); err == nil {
		t.Error("a bad tlsMinVersion must fail")
	}
	if _, err := TLSConfig(TLSOptions{PKIDir: dir, Host: "node-a", CipherSuites: []string{"NOPE"}}); err == nil {
		t.Error("a bad tlsCipherSuites must fail")
	}
}

// Configured certificate files are loaded again when they change.
func TestServingCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(host string) {
		c, k, err := selfSigned(host, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, k, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	leafHost := func(cfg *tls.Config) string {
		c, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.DNSNames[0]
	}
	write("first")
	cfg, err := TLSConfig(TLSOptions{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	if h := leafHost(cfg); h != "first" {
		t.Fatalf("serving %q", h)
	}
	write("second")
	deadline := time.Now().Add(3 * time.Second)
	for leafHost(cfg) != "second" {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate was never served")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.WriteFile(certFile, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if h := leafHost(cfg); h != "second" {
		t.Errorf("a broken pair replaced the served one: %q", h)
	}
}
