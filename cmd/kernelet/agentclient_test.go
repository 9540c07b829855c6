package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusOverHTTPS: `kernelet status` reaches the kubelet API's HTTPS
// port with kubectl's flags: the server verified with
// --certificate-authority, the client authenticated with --token (a
// request without it is refused, as the kubelet API refuses it).
func TestStatusOverHTTPS(t *testing.T) {
	const token = "node-admin-token"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte("[+]ping ok\nhealthz check passed\n"))
		case "/status":
			_, _ = w.Write([]byte(`{"version":"v9","nodeName":"tls-node","mode":"standalone"}`))
		case "/pods":
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","items":[]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "status", "--server", srv.URL, "--certificate-authority", ca, "--token", token)
	if code != 0 || !strings.Contains(out, "Node:        tls-node (standalone)") || !strings.Contains(out, "Health:      healthy") {
		t.Errorf("with CA and token: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "status", "--server", srv.URL, "--token", token); code != 1 || !strings.Contains(errs, "certificate") {
		t.Errorf("without the CA the server must not be trusted: exit %d %s", code, errs)
	}
	if code, _, _ := run(t, "status", "--server", srv.URL, "--insecure-skip-tls-verify"); code != 1 {
		t.Errorf("without the token: exit %d, want 1 (401)", code)
	}
	if code, _, errs := run(t, "status", "--server", srv.URL, "--client-certificate", "/no/cert", "--client-key", "/no/key"); code != 2 ||
		!strings.Contains(errs, "--client-certificate/--client-key") {
		t.Errorf("a missing client certificate: exit %d %s", code, errs)
	}
}
