package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	criclient "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u := strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://")
	host, port, err := net.SplitHostPort(u)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return host, n
}

func TestHTTPProbe(t *testing.T) {
	var gotUA, gotHeader, gotHost string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHeader, gotHost = r.UserAgent(), r.Header.Get("X-Probe"), r.Host
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, port := hostPort(t, srv.URL)
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/ok", port), http.StatusFound)
	})
	tls := httptest.NewTLSServer(mux)
	defer tls.Close()
	_, tlsPort := hostPort(t, tls.URL)

	h := newHandlers(nil, "kube-probe/1.37")
	ctr := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	tgt := target{podIP: "127.0.0.1", container: ctr}
	for name, tc := range map[string]struct {
		get     v1.HTTPGetAction
		outcome Outcome
		output  string
	}{
		"ok by number":        {get: v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(port)}, outcome: OutcomeSuccess, output: "fine"},
		"ok by name":          {get: v1.HTTPGetAction{Path: "ok", Port: intstr.FromString("web")}, outcome: OutcomeSuccess, output: "fine"},
		"status 503":          {get: v1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt(port)}, outcome: OutcomeFailure, output: "HTTP probe failed with statuscode: 503"},
		"same-host redirect":  {get: v1.HTTPGetAction{Path: "/same", Port: intstr.FromInt(port)}, outcome: OutcomeSuccess, output: "fine"},
		"other-host redirect": {get: v1.HTTPGetAction{Path: "/other", Port: intstr.FromInt(port)}, outcome: OutcomeWarning, output: "Probe terminated redirects, Response body: "},
		"https unverified":    {get: v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(tlsPort), Scheme: v1.URISchemeHTTPS}, outcome: OutcomeSuccess, output: "fine"},
	} {
		t.Run(name, func(t *testing.T) {
			o, out, err := h.runHTTP(context.Background(), &tc.get, tgt, 5*time.Second)
			if err != nil || o != tc.outcome || !strings.HasPrefix(out, tc.output) {
				t.Fatalf("runHTTP = %v, %q, %v; want %v, %q", o, out, err, tc.outcome, tc.output)
			}
		})
	}
	get := v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(port), HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "example.test"}}}
	if o, _, _ := h.runHTTP(context.Background(), &get, tgt, 5*time.Second); o != OutcomeSuccess {
		t.Fatalf("with headers: %v", o)
	}
	if gotUA != "kube-probe/1.37" || gotHeader != "yes" || gotHost != "example.test" {
		t.Fatalf("request seen: UA %q header %q host %q", gotUA, gotHeader, gotHost)
	}
	if _, _, err := h.runHTTP(context.Background(), &v1.HTTPGetAction{Port: intstr.FromString("nope")}, tgt, time.Second); err == nil {
		t.Fatal("unknown named port: no error")
	}
	srv.Close()
	if o, out, _ := h.runHTTP(context.Background(), &v1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(port)}, tgt, time.Second); o != OutcomeFailure || !strings.Contains(out, "connection refused") {
		t.Fatalf("closed server: %v %q", o, out)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if o, _, _ := runTCP(context.Background(), "127.0.0.1", port, time.Second); o != OutcomeSuccess {
		t.Fatalf("open port: %v", o)
	}
	ln.Close()
	if o, _, _ := runTCP(context.Background(), "127.0.0.1", port, time.Second); o != OutcomeFailure {
		t.Fatalf("closed port: %v", o)
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	h := newHandlers(nil, "")
	if o, out, _ := h.runGRPC(context.Background(), ln.Addr().String(), "", 5*time.Second); o != OutcomeSuccess {
		t.Fatalf("serving: %v %q", o, out)
	}
	hs.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
	if o, out, _ := h.runGRPC(context.Background(), ln.Addr().String(), "svc", 5*time.Second); o != OutcomeFailure || out != `service unhealthy (responded with "NOT_SERVING")` {
		t.Fatalf("not serving: %v %q", o, out)
	}
}

func TestExecProbe(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		outcome Outcome
		output  string
	}{
		"exit 0":    {outcome: OutcomeSuccess, output: "out"},
		"exit 1":    {err: utilexec.CodeExitError{Err: errors.New("exited"), Code: 1}, outcome: OutcomeFailure, output: "out"},
		"timed out": {err: fmt.Errorf("%w: %q timed out after 1s", criclient.ErrCommandTimedOut, "sleep 10"), outcome: OutcomeFailure, output: `command timed out: "sleep 10" timed out after 1s`},
		"errored":   {err: errors.New("container not found"), outcome: OutcomeUnknown},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHandlers(func(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
				return []byte("out"), nil, tc.err
			}, "")
			o, out, err := h.runExec(context.Background(), []string{"x"}, "id", time.Second)
			if o != tc.outcome || out != tc.output || (o == OutcomeUnknown) != (err != nil) {
				t.Fatalf("runExec = %v %q %v", o, out, err)
			}
		})
	}
}

func TestExpandCommand(t *testing.T) {
	c := &v1.Container{Env: []v1.EnvVar{{Name: "F", Value: "/tmp/health"}, {Name: "S", ValueFrom: &v1.EnvVarSource{}}}}
	got := ExpandCommand([]string{"cat", "$(F)", "$(S)", "$$(F)"}, c)
	if strings.Join(got, " ") != "cat /tmp/health $(S) $(F)" {
		t.Fatalf("ExpandCommand = %q", got)
	}
}
