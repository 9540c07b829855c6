package agent

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/agent/config"
	"github.com/kernelet/kernelet/agent/runtime"
)

type fakeRuntime struct{ ready atomic.Bool }

func (f *fakeRuntime) Info(context.Context) (*runtime.Info, error) {
	return &runtime.Info{RuntimeName: "fake", RuntimeVersion: "1.0", Conditions: map[string]string{"RuntimeReady": "true"}}, nil
}
func (f *fakeRuntime) Ready(context.Context) error {
	if f.ready.Load() {
		return nil
	}
	return errors.New("container runtime not ready: Test: down")
}
func (f *fakeRuntime) Close(context.Context) error { return nil }

func freePort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// insecure trusts any server certificate: the agent's is self-signed.
var insecure = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

// standalone is the kubelet API configuration of a node without an API
// server: anonymous requests, no webhooks, everything allowed.
func standalone(cfg *config.Config) *config.Config {
	yes, no := true, false
	cfg.Kubelet.Address = "127.0.0.1"
	cfg.Kubelet.Authentication.Anonymous.Enabled = &yes
	cfg.Kubelet.Authentication.Webhook.Enabled = &no
	cfg.Kubelet.Authorization.Mode = kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow
	return cfg
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := insecure.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The agent serves /healthz on the healthz port, /metrics, /configz and
// /status on the secure API port (HTTPS, self-signed), reports the runtime
// in healthz, and stops cleanly when its context ends.
func TestAgentServesAndStops(t *testing.T) {
	cfg := standalone(config.Default())
	cfg.Kubelet.Port = freePort(t)
	hp := freePort(t)
	cfg.Kubelet.HealthzPort = &hp

	fr := &fakeRuntime{}
	var connects atomic.Int32
	a, err := New(Options{Config: cfg, NodeName: "node-a", RootDir: t.TempDir()}, Deps{
		ConnectRuntime: func(ctx context.Context, ep string, _ time.Duration) (Runtime, error) {
			if connects.Add(1) == 1 {
				return nil, errors.New("dial " + ep + ": connection refused")
			}
			return fr, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.RuntimeConnected():
	case <-time.After(10 * time.Second):
		t.Fatal("runtime never connected (the agent must retry)")
	}
	addrs := a.Addrs()
	if !strings.HasPrefix(addrs["api"], "127.0.0.1:") {
		t.Errorf("api must bind the configured address, got %q", addrs["api"])
	}
	if ro, ok := addrs["read-only"]; ok {
		t.Errorf("readOnlyPort 0 must bind nothing, got %q", ro)
	}
	if addrs["local"] == "" {
		t.Error("no local socket")
	}

	code, body := fetch(t, "http://"+addrs["healthz"]+"/healthz")
	if code != 500 || !strings.Contains(body, "[-]runtime failed: reason withheld") {
		t.Errorf("healthz with runtime down = %d %q", code, body)
	}
	if code, body := fetch(t, "http://"+addrs["healthz"]+"/healthz/runtime"); code != 500 || !strings.Contains(body, "container runtime not ready: Test: down") {
		t.Errorf("healthz/runtime with runtime down = %d %q", code, body)
	}
	fr.ready.Store(true)
	if code, body := fetch(t, "http://"+addrs["healthz"]+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("healthz = %d %q", code, body)
	}
	if _, body := fetch(t, "https://"+addrs["api"]+"/metrics"); !strings.Contains(body, `kernelet_build_info{goversion="go1.`) || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_start_time_seconds") {
		t.Errorf("metrics lack build info / Go / process collectors:\n%.500s", body)
	}
	if _, body := fetch(t, "https://"+addrs["api"]+"/configz"); !strings.Contains(body, `"maxPods": 110`) {
		t.Errorf("configz: %.300s", body)
	}
	_, body = fetch(t, "https://"+addrs["api"]+"/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if st.NodeName != "node-a" || !st.Runtime.Connected || st.Runtime.Info.RuntimeName != "fake" || st.Mode != "standalone" || len(st.Thresholds) != 6 {
		t.Errorf("status = %+v", st)
	}
	// A runtime without a CRI service runs no pods: /pods is an empty
	// PodList, the pleg check passes, /status says -1 pods.
	if _, body := fetch(t, "https://"+addrs["api"]+"/pods"); !strings.Contains(body, `"kind": "PodList"`) {
		t.Errorf("/pods: %.300s", body)
	}
	if code, body := fetch(t, "http://"+addrs["healthz"]+"/healthz?verbose"); code != 200 || !strings.Contains(body, "[+]pleg ok") || !strings.Contains(body, "[+]syncloop ok") {
		t.Errorf("healthz pleg = %d %q", code, body)
	}
	if st.Pods != -1 {
		t.Errorf("status pods = %d, want -1", st.Pods)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop")
	}
	if _, err := insecure.Get("https://" + addrs["api"] + "/healthz"); err == nil {
		t.Error("api still serving after stop")
	}
}

func TestAgentPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := standalone(config.Default())
	cfg.Kubelet.Port = int32(l.Addr().(*net.TCPAddr).Port)
	hp := freePort(t)
	cfg.Kubelet.HealthzPort = &hp
	a, _ := New(Options{Config: cfg, NodeName: "node-a", RootDir: t.TempDir()}, Deps{})
	err = a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "api server") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("want a bind error naming the api server, got %v", err)
	}
	// The healthz port bound before the failure must be released again.
	if l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(hp)))); err != nil {
		t.Errorf("healthz port leaked: %v", err)
	} else {
		l2.Close()
	}
}

// With kubelet's defaults (webhook authentication and authorization) and no
// API server client, the agent refuses to start, naming what is missing.
func TestAgentWebhookWithoutClient(t *testing.T) {
	cfg := config.Default()
	cfg.Kubelet.Address = "127.0.0.1"
	cfg.Kubelet.Port = freePort(t)
	hp := freePort(t)
	cfg.Kubelet.HealthzPort = &hp
	a, _ := New(Options{Config: cfg, NodeName: "node-a", RootDir: t.TempDir()}, Deps{})
	err := a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "authentication.webhook.enabled: needs an API server client (--kubeconfig)") {
		t.Fatalf("want the missing client named, got %v", err)
	}
}
