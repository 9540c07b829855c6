package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func pemOf(certs ...*x509.Certificate) []byte {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return out
}

// verifies tells whether c verifies against ca's bundle now.
func verifies(ca *ClientCA, c *x509.Certificate) bool {
	opts, ok := ca.VerifyOptions()
	if !ok {
		return false
	}
	_, err := c.Verify(opts)
	return err == nil
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// runClientCA runs c.Run until the test ends.
func runClientCA(t *testing.T, c *ClientCA) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	time.Sleep(50 * time.Millisecond) // let the watch start
}

func TestNewClientCAErrors(t *testing.T) {
	dir := t.TempDir()
	ca, _ := cert(t, "ca", nil, true, nil, nil)
	for name, content := range map[string][]byte{
		"empty":          nil,
		"blank":          []byte("\n \n"),
		"no certificate": []byte("not a PEM bundle"),
		"valid":          pemOf(ca),
	} {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := NewClientCA(f)
		if (err == nil) != (name == "valid") {
			t.Errorf("%s: err = %v", name, err)
		}
		if name == "blank" && !errors.Is(err, errEmptyCABundle) {
			t.Errorf("blank: err = %v, want errEmptyCABundle", err)
		}
	}
	if _, err := NewClientCA(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
}

// The bundle is reloaded when the file is swapped (renamed over),
// written in place or replaced through a symlink swap as a Kubernetes
// volume does; a broken or missing file keeps the bundle in use.
func TestClientCAReload(t *testing.T) {
	caA, keyA := cert(t, "ca-a", nil, true, nil, nil)
	caB, keyB := cert(t, "ca-b", nil, true, nil, nil)
	caC, keyC := cert(t, "ca-c", nil, true, nil, nil)
	clientA, _ := cert(t, "client-a", nil, false, caA, keyA)
	clientB, _ := cert(t, "client-b", nil, false, caB, keyB)
	clientC, _ := cert(t, "client-c", nil, false, caC, keyC)
	dir := t.TempDir()
	file := filepath.Join(dir, "ca.crt")
	write := func(path string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, pemOf(caA))
	ca, err := NewClientCA(file)
	if err != nil {
		t.Fatal(err)
	}
	if !verifies(ca, clientA) || verifies(ca, clientB) {
		t.Fatal("the first bundle must verify client-a only")
	}
	runClientCA(t, ca)

	// Swapped: a new file renamed over the old one.
	write(filepath.Join(dir, "ca.crt.new"), pemOf(caB))
	if err := os.Rename(filepath.Join(dir, "ca.crt.new"), file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the swapped bundle verifies client-b", func() bool { return verifies(ca, clientB) })
	if verifies(ca, clientA) {
		t.Error("client-a still verifies after the swap")
	}

	// Broken, then removed: the bundle in use stays.
	write(file, []byte("garbage"))
	time.Sleep(300 * time.Millisecond)
	if !verifies(ca, clientB) {
		t.Fatal("a broken file must keep the bundle in use")
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if !verifies(ca, clientB) {
		t.Fatal("a missing file must keep the bundle in use")
	}

	// Recreated in place, holding two CAs.
	write(file, pemOf(caA, caC))
	waitFor(t, "the recreated bundle verifies client-a and client-c", func() bool { return verifies(ca, clientA) && verifies(ca, clientC) })

	// Written in place again (the file watch, not a directory entry).
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(pemOf(caB)); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	waitFor(t, "the rewritten bundle verifies client-b only", func() bool { return verifies(ca, clientB) && !verifies(ca, clientA) })
}

// A Kubernetes volume (a Secret, a ConfigMap) updates ca.crt, a symlink
// to ..data/ca.crt, by swapping the ..data symlink to a new directory.
func TestClientCASymlinkSwap(t *testing.T) {
	caA, keyA := cert(t, "ca-a", nil, true, nil, nil)
	caB, keyB := cert(t, "ca-b", nil, true, nil, nil)
	clientA, _ := cert(t, "client-a", nil, false, caA, keyA)
	clientB, _ := cert(t, "client-b", nil, false, caB, keyB)
	dir := t.TempDir()
	version := func(name string, bundle []byte) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "ca.crt"), bundle, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..v1", pemOf(caA))
	file := filepath.Join(dir, "ca.crt")
	if err := os.Symlink("..data/ca.crt", file); err != nil {
		t.Fatal(err)
	}
	ca, err := NewClientCA(file)
	if err != nil {
		t.Fatal(err)
	}
	runClientCA(t, ca)
	version("..v2", pemOf(caB))
	if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the swapped bundle verifies client-b only", func() bool { return verifies(ca, clientB) && !verifies(ca, clientA) })
}

// Auth authenticates against the reloaded bundle: once the file names
// another CA, that CA's clients are let in and the old CA's are not.
func TestAuthClientCAReload(t *testing.T) {
	caA, keyA := cert(t, "ca-a", nil, true, nil, nil)
	caB, keyB := cert(t, "ca-b", nil, true, nil, nil)
	clientA, _ := cert(t, "client-a", nil, false, caA, keyA)
	clientB, _ := cert(t, "client-b", nil, false, caB, keyB)
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, pemOf(caA), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{NodeName: "node-1",
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: file},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: boolp(false)},
		},
		Authorization: kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }))
	code := func(c *x509.Certificate) int {
		r := httptest.NewRequest("GET", "/pods", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	if code(clientA) != 200 || code(clientB) != 401 {
		t.Fatalf("before the swap: client-a %d, client-b %d; want 200, 401", code(clientA), code(clientB))
	}
	time.Sleep(50 * time.Millisecond) // let the watch start
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, pemOf(caB), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "client-b is let in", func() bool { return code(clientB) == 200 })
	if c := code(clientA); c != 401 {
		t.Errorf("client-a after the swap: %d, want 401", c)
	}
}
