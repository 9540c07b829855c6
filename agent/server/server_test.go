package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestHealthz(t *testing.T) {
	healthy := true
	checks := []HealthCheck{
		{Name: "ping", Check: func(*http.Request) error { return nil }},
		{Name: "pleg", Check: func(*http.Request) error {
			if healthy {
				return nil
			}
			return errors.New("pleg was last seen active 3m0.5s ago; threshold is 3m0s")
		}},
	}
	h := Handler(Options{Checks: checks})
	cases := map[string]struct {
		healthy  bool
		path     string
		wantCode int
		wantBody string
	}{
		"healthy":          {true, "/healthz", 200, "ok"},
		"healthy verbose":  {true, "/healthz?verbose", 200, "[+]ping ok\n[+]pleg ok\nhealthz check passed\n"},
		"unhealthy":        {false, "/healthz", 500, "[+]ping ok\n[-]pleg failed: reason withheld\nhealthz check failed\n"},
		"one check passes": {false, "/healthz/ping", 200, "ok"},
		"one check fails":  {false, "/healthz/pleg", 500, "internal server error: pleg was last seen active 3m0.5s ago; threshold is 3m0s\n"},
		"check excluded":   {false, "/healthz?exclude=pleg", 200, "ok"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			healthy = tc.healthy
			code, body := get(t, h, tc.path)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestMetricsConfigzStatus(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kernelet_test_gauge", Help: "h"})
	g.Set(42)
	reg.MustRegister(g)
	h := Handler(Options{
		Gatherer: reg,
		Configz:  func() any { return map[string]int{"maxPods": 110} },
		Status:   func(context.Context) any { return map[string]string{"state": "running"} },
	})
	if code, body := get(t, h, "/metrics"); code != 200 || !strings.Contains(body, "kernelet_test_gauge 42") {
		t.Errorf("/metrics = %d %q", code, body)
	}
	if code, body := get(t, h, "/configz"); code != 200 || !strings.Contains(body, `"kubeletconfig": {`) || !strings.Contains(body, `"maxPods": 110`) {
		t.Errorf("/configz = %d %q", code, body)
	}
	if code, body := get(t, h, "/status"); code != 200 || !strings.Contains(body, `"state": "running"`) {
		t.Errorf("/status = %d %q", code, body)
	}
}

func TestListenServeShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l, err := Listen(ctx, "test", "127.0.0.1:0", HealthzHandler(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(ctx, "dup", l.Addr(), HealthzHandler(nil)); err == nil || !strings.Contains(err.Error(), "dup server") {
		t.Errorf("binding a port in use must fail naming the server, got %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx) }()
	resp, err := http.Get("http://" + l.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("body %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("graceful shutdown: %v", err)
	}
}

func TestListenUnix(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	path := filepath.Join(t.TempDir(), "k.sock")
	l, err := ListenUnix(ctx, "local", path, HealthzHandler(nil))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v", fi.Mode(), err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx) }()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	resp, err := c.Get("http://local/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("body %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if _, err := ListenUnix(context.Background(), "local", "/"+strings.Repeat("x", 120), nil); err == nil || !strings.Contains(err.Error(), "longer than 107 bytes") {
		t.Errorf("a long path: %v", err)
	}
}
