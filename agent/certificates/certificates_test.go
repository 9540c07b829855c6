package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// testCA issues certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a client (or, with hosts, serving) certificate and key
// valid from notBefore to notAfter.
func (ca *testCA) issue(t *testing.T, cn string, notBefore, notAfter time.Time, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPaths(t *testing.T) {
	if got := DefaultCertDir("/var/lib/kubelet"); got != "/var/lib/kubelet/pki" {
		t.Errorf("DefaultCertDir = %q", got)
	}
	if got := CurrentPath("/d", ClientPrefix); got != "/d/kubelet-client-current.pem" {
		t.Errorf("client CurrentPath = %q", got)
	}
	if got := CurrentPath("/d", ServingPrefix); got != "/d/kubelet-server-current.pem" {
		t.Errorf("serving CurrentPath = %q", got)
	}
}

// TestKubeconfigUsable decides with an injected time whether a kubeconfig
// is used as is or bootstrapped again.
func TestKubeconfigUsable(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	certPEM, keyPEM := ca.issue(t, "system:node:n", t0, t0.Add(time.Hour))
	_, otherKey := ca.issue(t, "system:node:n", t0, t0.Add(time.Hour))
	pair := filepath.Join(dir, "pair.pem")
	writeFile(t, pair, append(append([]byte{}, certPEM...), keyPEM...))
	kubeconfig := func(name, auth string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {`+auth+`}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`))
		return p
	}
	b64 := func(b []byte) string { return strings.TrimSpace(encodeB64(b)) }
	files := kubeconfig("files", `client-certificate: `+pair+`, client-key: `+pair)
	data := kubeconfig("data", `client-certificate-data: `+b64(certPEM)+`, client-key-data: `+b64(keyPEM))
	mismatched := kubeconfig("mismatch", `client-certificate-data: `+b64(certPEM)+`, client-key-data: `+b64(otherKey))
	token := kubeconfig("token", `token: abc`)
	dangling := kubeconfig("dangling", `client-certificate: `+filepath.Join(dir, "gone.pem")+`, client-key: `+filepath.Join(dir, "gone.pem"))
	garbage := filepath.Join(dir, "garbage")
	writeFile(t, garbage, []byte("{not yaml"))

	for name, tc := range map[string]struct {
		path   string
		now    time.Time
		usable bool
		why    string
	}{
		"files valid":        {files, t0.Add(30 * time.Minute), true, ""},
		"data valid":         {data, t0.Add(30 * time.Minute), true, ""},
		"files expired":      {files, t0.Add(61 * time.Minute), false, "expired at 2030-01-01T01:00:00Z"},
		"data expired":       {data, t0.Add(2 * time.Hour), false, "expired"},
		"not yet valid":      {files, t0.Add(-time.Minute), false, "not valid before"},
		"key does not match": {mismatched, t0.Add(time.Minute), false, "private key does not match"},
		"token":              {token, t0.Add(100 * time.Hour), true, ""},
		"missing":            {filepath.Join(dir, "none"), t0, false, "no such file"},
		"certificate gone":   {dangling, t0, false, "no such file"},
		"does not load":      {garbage, t0, false, "kubeconfig"},
	} {
		t.Run(name, func(t *testing.T) {
			err := KubeconfigUsable(tc.path, tc.now)
			if (err == nil) != tc.usable {
				t.Fatalf("usable = %v (%v), want %v", err == nil, err, tc.usable)
			}
			if err != nil && !strings.Contains(err.Error(), tc.why) {
				t.Errorf("reason %q lacks %q", err, tc.why)
			}
		})
	}
}

func TestBootstrappedKubeconfig(t *testing.T) {
	dir := t.TempDir()
	pemPath := CurrentPath(dir, ClientPrefix)
	for name, boot := range map[string]*rest.Config{
		"ca data": {Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n")}, BearerToken: "abcdef.0123456789abcdef"},
		"ca file": {Host: "https://api:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: "/etc/kubernetes/pki/ca.crt", CAData: []byte("ignored"), ServerName: "kubernetes"}, BearerToken: "abcdef.0123456789abcdef"},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := BootstrappedKubeconfig(boot, pemPath)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".kubeconfig")
			if err := WriteKubeconfig(path, data); err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", st.Mode().Perm())
			}
			raw, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := raw.Contexts[raw.CurrentContext]
			cl, auth := raw.Clusters[ctx.Cluster], raw.AuthInfos[ctx.AuthInfo]
			if cl.Server != boot.Host || auth.ClientCertificate != pemPath || auth.ClientKey != pemPath || auth.Token != "" || cl.TLSServerName != boot.ServerName {
				t.Errorf("server %q cert %q key %q token %q serverName %q", cl.Server, auth.ClientCertificate, auth.ClientKey, auth.Token, cl.TLSServerName)
			}
			if boot.CAFile != "" {
				if cl.CertificateAuthority != boot.CAFile || len(cl.CertificateAuthorityData) != 0 {
					t.Errorf("CA file %q data %q, want the file only", cl.CertificateAuthority, cl.CertificateAuthorityData)
				}
			} else if string(cl.CertificateAuthorityData) != string(boot.CAData) || cl.CertificateAuthority != "" {
				t.Errorf("CA data %q file %q, want the data", cl.CertificateAuthorityData, cl.CertificateAuthority)
			}
		})
	}
}

func TestRequestNameAndUsages(t *testing.T) {
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	subj := NodeSubject("node-a")
	usages := ClientUsages(k1)
	if want := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}; !reflect.DeepEqual(usages, want) {
		t.Errorf("ECDSA client usages %v, want %v", usages, want)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := ServingUsages(rk); !reflect.DeepEqual(got, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageKeyEncipherment}) {
		t.Errorf("RSA serving usages %v", got)
	}
	if subj.CommonName != "system:node:node-a" || !reflect.DeepEqual(subj.Organization, []string{"system:nodes"}) {
		t.Errorf("subject %+v", subj)
	}
	n1, _ := RequestName(k1.Public(), subj, usages)
	again, _ := RequestName(k1.Public(), subj, usages)
	n2, _ := RequestName(k2.Public(), subj, usages)
	other, _ := RequestName(k1.Public(), NodeSubject("node-b"), usages)
	if n1 != again || n1 == n2 || n1 == other || !strings.HasPrefix(n1, "node-csr-") || len(n1) > 253 {
		t.Errorf("names: %q %q %q %q", n1, again, n2, other)
	}
}

func TestServingTemplate(t *testing.T) {
	ip := net.ParseIP
	for name, tc := range map[string]struct {
		hosts   []string
		ips     []net.IP
		wantDNS []string
		wantIPs []string
	}{
		"name and ips":      {[]string{"node-a"}, []net.IP{ip("10.0.0.2"), ip("10.0.0.1"), ip("fd00::1")}, []string{"node-a"}, []string{"10.0.0.1", "10.0.0.2", "fd00::1"}},
		"duplicates":        {[]string{"node-a", "node-a", "10.0.0.1"}, []net.IP{ip("10.0.0.1")}, []string{"node-a"}, []string{"10.0.0.1"}},
		"hostname is an ip": {[]string{"192.168.1.5"}, nil, nil, []string{"192.168.1.5"}},
		"nothing":           {[]string{""}, nil, nil, nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := ServingTemplate("node-a", tc.hosts, tc.ips)
			if tc.wantDNS == nil && tc.wantIPs == nil {
				if got != nil {
					t.Fatalf("want no template, got %+v", got)
				}
				return
			}
			var ips []string
			for _, i := range got.IPAddresses {
				ips = append(ips, i.String())
			}
			if !reflect.DeepEqual(got.DNSNames, tc.wantDNS) || !reflect.DeepEqual(ips, tc.wantIPs) || got.Subject.CommonName != "system:node:node-a" {
				t.Errorf("dns %v ips %v cn %q", got.DNSNames, ips, got.Subject.CommonName)
			}
		})
	}
}

func TestProblems(t *testing.T) {
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot")
	writeFile(t, boot, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: abcdef.0123456789abcdef}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`))
	// a usable kubeconfig (a token): the bootstrap kubeconfig is not read
	usable := filepath.Join(dir, "usable")
	writeFile(t, usable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`))
	on := &kubeletv1beta1.KubeletConfiguration{RotateCertificates: true, ServerTLSBootstrap: true}
	off := &kubeletv1beta1.KubeletConfiguration{}
	for name, tc := range map[string]struct {
		o    Options
		kc   *kubeletv1beta1.KubeletConfiguration
		want []string
	}{
		"bootstrap":                              {Options{Kubeconfig: filepath.Join(dir, "kc"), BootstrapKubeconfig: boot, CertDir: dir}, on, nil},
		"standalone":                             {Options{}, off, nil},
		"bootstrap without target":               {Options{BootstrapKubeconfig: boot}, off, []string{"--kubeconfig: Required value"}},
		"bootstrap file missing":                 {Options{Kubeconfig: "/kc", BootstrapKubeconfig: filepath.Join(dir, "none")}, off, []string{"--bootstrap-kubeconfig: Invalid value"}},
		"bootstrap file gone, kubeconfig usable": {Options{Kubeconfig: usable, BootstrapKubeconfig: filepath.Join(dir, "none")}, off, nil},
		"relative cert dir":                      {Options{Kubeconfig: "/kc", CertDir: "pki"}, off, []string{`--cert-dir: Invalid value: "pki": must be an absolute path`}},
		"rotation on a lone node":                {Options{}, on, []string{"rotateCertificates: Invalid value: true: needs --kubeconfig", "serverTLSBootstrap: Invalid value: true: needs --kubeconfig"}},
		"serving without the gate":               {Options{Kubeconfig: "/kc"}, &kubeletv1beta1.KubeletConfiguration{ServerTLSBootstrap: true, FeatureGates: map[string]bool{"RotateKubeletServerCertificate": false}}, []string{"serverTLSBootstrap: Invalid value: true: needs the RotateKubeletServerCertificate feature gate"}},
	} {
		t.Run(name, func(t *testing.T) {
			errs := Problems(tc.o, tc.kc)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %v, want %d problems %v", errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d %q lacks %q", i, errs[i], w)
				}
			}
		})
	}
}
