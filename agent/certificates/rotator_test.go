package certificates

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRotationDeadline(t *testing.T) {
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		lifetime time.Duration
		u        float64
		want     time.Duration
	}{
		"earliest": {100 * time.Hour, 0, 70 * time.Hour},
		"middle":   {100 * time.Hour, 0.5, 80 * time.Hour},
		"latest":   {100 * time.Hour, 0.999999, 90 * time.Hour},
		"a year":   {365 * 24 * time.Hour, 0.25, time.Duration(0.75 * float64(365*24*time.Hour))},
		"short":    {8 * time.Minute, 0, 336 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			got := RotationDeadline(nb, nb.Add(tc.lifetime), tc.u).Sub(nb)
			if d := got - tc.want; d < -time.Second || d > time.Second {
				t.Errorf("deadline %v after notBefore, want %v", got, tc.want)
			}
		})
	}
}

// TestNextWake decides, with an injected time, when the rotation loop
// renews.
func TestNextWake(t *testing.T) {
	ca := newTestCA(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	certPEM, keyPEM := ca.issue(t, "system:node:a", t0, t0.Add(10*time.Hour))
	pair, err := tls.X509KeyPair(certPEM, append(keyPEM, '\n'))
	if err != nil {
		t.Fatal(err)
	}
	deadline := RotationDeadline(t0, t0.Add(10*time.Hour), 0.5) // t0+8h
	// the test CA issues without an organization
	match := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:a"}}
	other := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:b"}}
	for name, tc := range map[string]struct {
		now     time.Time
		cur     *tls.Certificate
		tmpl    *x509.CertificateRequest
		dynamic bool
		want    time.Duration
	}{
		"no template yet":           {t0, &pair, nil, true, time.Second},
		"no certificate":            {t0, nil, match, false, 0},
		"before the deadline":       {t0.Add(time.Hour), &pair, match, false, 7 * time.Hour},
		"dynamic rechecks":          {t0.Add(time.Hour), &pair, match, true, templateRecheck},
		"dynamic near the deadline": {deadline.Add(-10 * time.Second), &pair, match, true, 10 * time.Second},
		"at the deadline":           {deadline, &pair, match, false, 0},
		"expired":                   {t0.Add(11 * time.Hour), &pair, match, false, 0},
		"template changed":          {t0.Add(time.Hour), &pair, other, true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			got := nextWake(tc.now, tc.cur, deadline, tc.tmpl, tc.dynamic)
			if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond || (tc.want == 0) != (got == 0) {
				t.Errorf("nextWake = %v, want %v", got, tc.want)
			}
		})
	}
	if nextRetry(0) != retryFirst || nextRetry(retryFirst) != 2*retryFirst || nextRetry(retryMax) != retryMax {
		t.Errorf("retries %v %v %v", nextRetry(0), nextRetry(retryFirst), nextRetry(retryMax))
	}
}

func TestSatisfies(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	certPEM, keyPEM := ca.issue(t, "system:node:a", now, now.Add(time.Hour), "a", "10.0.0.1")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	// the test CA issues without an organization
	subj := NodeSubject("a")
	subj.Organization = nil
	ip := net.ParseIP
	for name, tc := range map[string]struct {
		tmpl *x509.CertificateRequest
		want bool
	}{
		"same":         {&x509.CertificateRequest{Subject: subj, DNSNames: []string{"a"}, IPAddresses: []net.IP{ip("10.0.0.1")}}, true},
		"ip added":     {&x509.CertificateRequest{Subject: subj, DNSNames: []string{"a"}, IPAddresses: []net.IP{ip("10.0.0.1"), ip("10.0.0.2")}}, false},
		"name changed": {&x509.CertificateRequest{Subject: subj, DNSNames: []string{"b"}, IPAddresses: []net.IP{ip("10.0.0.1")}}, false},
		"other node":   {&x509.CertificateRequest{Subject: NodeSubject("b"), DNSNames: []string{"a"}, IPAddresses: []net.IP{ip("10.0.0.1")}}, false},
		"none":         {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Satisfies(pair.Leaf, tc.tmpl); got != tc.want {
				t.Errorf("Satisfies = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIssued(t *testing.T) {
	cond := func(typ certificatesv1.RequestConditionType, st corev1.ConditionStatus) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: st, Reason: "R"}
	}
	for name, tc := range map[string]struct {
		status certificatesv1.CertificateSigningRequestStatus
		done   bool
		cert   bool
		errHas string
	}{
		"pending":            {certificatesv1.CertificateSigningRequestStatus{}, false, false, ""},
		"approved, unsigned": {certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}}, false, false, ""},
		"issued":             {certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue)}, Certificate: []byte("x")}, true, true, ""},
		"denied":             {certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, corev1.ConditionTrue)}}, true, false, "was denied"},
		"failed":             {certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionTrue), cond(certificatesv1.CertificateFailed, corev1.ConditionTrue)}}, true, false, "failed"},
		"approval withdrawn": {certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, corev1.ConditionFalse)}, Certificate: []byte("x")}, false, false, ""},
	} {
		t.Run(name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Status: tc.status}
			cert, done, err := issued(csr)
			if done != tc.done || (cert != nil) != tc.cert {
				t.Fatalf("done %v cert %q err %v", done, cert, err)
			}
			if tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas) || !isFinal(err)) {
				t.Errorf("err %v, want a final error with %q", err, tc.errHas)
			}
			if tc.errHas == "" && err != nil {
				t.Errorf("err %v", err)
			}
		})
	}
}

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	s := fileStore{dir: dir, prefix: ClientPrefix, now: func() time.Time { return now }}
	if _, err := s.Current(); err != errNoCert {
		t.Fatalf("empty store: %v, want errNoCert", err)
	}
	// the fallback pair (a kubeconfig's or tlsCertFile's files)
	c0, k0 := ca.issue(t, "zero", now, now.Add(time.Hour))
	writeFile(t, filepath.Join(dir, "f.crt"), c0)
	writeFile(t, filepath.Join(dir, "f.key"), k0)
	s.certFile, s.keyFile = filepath.Join(dir, "f.crt"), filepath.Join(dir, "f.key")
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "zero" {
		t.Fatalf("fallback: %v", err)
	}
	for i, cn := range []string{"one", "two"} {
		now = now.Add(time.Duration(i) * time.Minute)
		certPEM, keyPEM := ca.issue(t, cn, now, now.Add(time.Hour))
		if _, err := s.Update(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		c, err := s.Current()
		if err != nil || c.Leaf.Subject.CommonName != cn {
			t.Fatalf("after update %d: %v", i, err)
		}
		target, err := os.Readlink(s.CurrentPath())
		want := filepath.Join(dir, "kubelet-client-"+now.Format("2006-01-02-15-04-05")+".pem")
		if err != nil || target != want {
			t.Errorf("symlink -> %q (%v), want %q", target, err, want)
		}
		if st, _ := os.Stat(want); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode().Perm())
		}
	}
	if _, err := s.Update([]byte("junk"), []byte("junk")); err == nil {
		t.Error("a pair that does not load was stored")
	}
}

// TestRotatingTransport: after Swap, new requests present the new
// certificate while a request in flight (a watch) goes on over the
// connection of the old one.
func TestRotatingTransport(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := r.TLS.PeerCertificates[0].Subject.CommonName
		if r.URL.Path == "/watch" {
			io.WriteString(w, cn+"\n")
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, "end")
			return
		}
		io.WriteString(w, cn)
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	defer close(release)

	rt := newRotatingTransport(&tls.Config{InsecureSkipVerify: true})
	if _, err := rt.RoundTrip(httptest.NewRequest("GET", srv.URL, nil).WithContext(context.Background())); err != errNoClientCert {
		t.Fatalf("before a certificate: %v", err)
	}
	pair := func(cn string) *tls.Certificate {
		c, k := ca.issue(t, cn, now.Add(-time.Minute), now.Add(time.Hour))
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	hc := &http.Client{Transport: rt}
	get := func(path string) string {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	first := pair("first")
	if !rt.Swap(first) || rt.Swap(first) {
		t.Fatal("Swap of a new certificate must swap, of the same one not")
	}
	if got := get("/"); got != "first" {
		t.Fatalf("request presented %q", got)
	}
	watch, err := hc.Get(srv.URL + "/watch")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	line := make([]byte, len("first\n"))
	if _, err := io.ReadFull(watch.Body, line); err != nil || string(line) != "first\n" {
		t.Fatalf("watch start %q %v", line, err)
	}
	rt.Swap(pair("second"))
	if got := get("/"); got != "second" {
		t.Errorf("after the swap a request presented %q", got)
	}
	release <- struct{}{}
	rest, err := io.ReadAll(watch.Body)
	if err != nil || string(rest) != "end" {
		t.Errorf("the watch of the old certificate ended with %q, %v", rest, err)
	}
}

func TestGiveUp(t *testing.T) {
	notAfter := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := apierrors.NewUnauthorized("expired")
	wrapped := fmt.Errorf("certificate signing request: %w", refused)
	network := errors.New("dial tcp: connection refused")
	for name, tc := range map[string]struct {
		now       time.Time
		exitAfter time.Duration
		err       error
		want      bool
	}{
		"valid":                   {notAfter.Add(-time.Minute), ExitAfterExpiry, refused, false},
		"expired a moment ago":    {notAfter.Add(time.Minute), ExitAfterExpiry, refused, false},
		"expired long, refused":   {notAfter.Add(6 * time.Minute), ExitAfterExpiry, wrapped, true},
		"expired long, no server": {notAfter.Add(6 * time.Minute), ExitAfterExpiry, network, false},
		"serving: never":          {notAfter.Add(time.Hour), 0, refused, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := GiveUp(tc.now, notAfter, tc.exitAfter, tc.err); got != tc.want {
				t.Errorf("GiveUp = %v, want %v", got, tc.want)
			}
		})
	}
}
