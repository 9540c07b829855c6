package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// cert issues a certificate for cn/org signed by parent (self-signed when
// parent is nil).
func cert(t *testing.T, cn string, org []string, ca bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: org},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: ca,
	}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

// x509 client certificates are checked against the client CA file: the
// certificate's CN is the user (named in the 403), a certificate of
// another CA is unauthenticated.
func TestX509(t *testing.T) {
	ca, caKey := cert(t, "test-ca", nil, true, nil, nil)
	client, _ := cert(t, "kube-apiserver-kubelet-client", []string{"system:masters"}, false, ca, caKey)
	other, otherKey := cert(t, "other-ca", nil, true, nil, nil)
	stranger, _ := cert(t, "stranger", nil, false, other, otherKey)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{NodeName: "node-1",
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: boolp(false)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}})
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served") })
	req := func(c *x509.Certificate) *http.Request {
		r := httptest.NewRequest("GET", "/pods", nil)
		if c != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		}
		return r
	}
	for name, tc := range map[string]struct {
		a        *Auth
		c        *x509.Certificate
		wantCode int
		wantBody string
	}{
		"client of the CA":  {a, client, 200, "served"},
		"client of another": {a, stranger, 401, "Unauthorized"},
		"no certificate":    {a, nil, 401, "Unauthorized"},
		"denied names the user": {func() *Auth { d := *a; d.authz = authorizerfactory.NewAlwaysDenyAuthorizer(); return &d }(), client, 403,
			"Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.a.Wrap(ok).ServeHTTP(rec, req(tc.c))
			if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody {
				t.Errorf("= %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
	if _, err := New(Config{Authentication: kubeletv1beta1.KubeletAuthentication{X509: kubeletv1beta1.KubeletX509Authentication{ClientCAFile: "/nonexistent/ca.crt"}},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}}); err == nil {
		t.Error("a missing client CA file must fail")
	}
}
