package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestSecureAndReadOnlyHandlers(t *testing.T) {
	mark := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(name)) })
	}
	api := KubeletAPI{
		Options: Options{
			Configz: func() any { return map[string]int{"maxPods": 110} },
			Status:  func(context.Context) any { return "st" },
			Pods:    func(context.Context) any { return "pods" },
		},
		RunningPods:   func(context.Context) (any, error) { return "running", nil },
		ContainerLogs: mark("logs"),
		Exec:          mark("exec"), Attach: mark("attach"), PortForward: mark("pf"), Run: mark("run"),
	}
	secure, ro := SecureHandler(api), ReadOnlyHandler(api)
	cases := map[string]struct {
		h        http.Handler
		path     string
		wantCode int
		wantBody string
	}{
		"logs":                     {secure, "/containerLogs/ns/p/c", 200, "logs"},
		"exec":                     {secure, "/exec/ns/p/c", 200, "exec"},
		"exec with uid":            {secure, "/exec/ns/p/uid/c", 200, "exec"},
		"attach":                   {secure, "/attach/ns/p/c", 200, "attach"},
		"port-forward":             {secure, "/portForward/ns/p", 200, "pf"},
		"run":                      {secure, "/run/ns/p/c", 200, "run"},
		"runningpods":              {secure, "/runningpods/", 200, "\"running\"\n"},
		"configz":                  {secure, "/configz", 200, "{\n  \"kubeletconfig\": {\n    \"maxPods\": 110\n  }\n}\n"},
		"stats summary is 501":     {secure, "/stats/summary", 501, "/stats/summary is not implemented by kernelet yet\n"},
		"cadvisor is 501":          {secure, "/metrics/cadvisor", 501, "/metrics/cadvisor is not implemented by kernelet yet\n"},
		"unknown":                  {secure, "/nope", 404, "404 page not found\n"},
		"read-only pods":           {ro, "/pods", 200, "\"pods\"\n"},
		"read-only status":         {ro, "/status", 200, "\"st\"\n"},
		"read-only has no exec":    {ro, "/exec/ns/p/c", 404, "404 page not found\n"},
		"read-only has no logs":    {ro, "/containerLogs/ns/p/c", 404, "404 page not found\n"},
		"read-only has no configz": {ro, "/configz", 404, "404 page not found\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if code, body := get(t, tc.h, tc.path); code != tc.wantCode || body != tc.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
	// enableDebuggingHandlers false: kubelet's 405 on its debugging
	// handlers; the rest is served. Profiling only when asked.
	off := api
	off.NoDebugging, off.Profiling = true, true
	for _, p := range []string{"/exec/ns/p/c", "/containerLogs/ns/p/c", "/runningpods/", "/debug/pprof/", "/logs/x"} {
		if code, body := get(t, SecureHandler(off), p); code != 405 || body != "Debug endpoints are disabled.\n" {
			t.Errorf("debugging off: GET %s = %d %q", p, code, body)
		}
	}
	if code, _ := get(t, SecureHandler(off), "/pods"); code != 200 {
		t.Errorf("debugging off: /pods = %d", code)
	}
	if code, _ := get(t, secure, "/debug/pprof/"); code != 404 {
		t.Errorf("profiling not asked: /debug/pprof/ = %d, want 404", code)
	}
	prof := api
	prof.Profiling = true
	if code, body := get(t, SecureHandler(prof), "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("profiling: /debug/pprof/ = %d", code)
	}
	if code, _ := get(t, ReadOnlyHandler(prof), "/debug/pprof/"); code != 404 {
		t.Errorf("read-only port serves /debug/pprof/: %d", code)
	}

	api.RunningPods = func(context.Context) (any, error) { return nil, errors.New("cri down") }
	if code, _ := get(t, SecureHandler(api), "/runningpods/"); code != 500 {
		t.Errorf("runningpods with a failing runtime = %d, want 500", code)
	}
}

func TestStatsAndMetricsEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "probe_marker", Help: "m"}, func() float64 { return 1 }))
	api := KubeletAPI{Cadvisor: reg, Resource: reg, Probes: reg,
		Summary: func(_ context.Context, only bool) (any, error) { return map[string]bool{"only": only}, nil }}
	for _, h := range []http.Handler{SecureHandler(api), ReadOnlyHandler(api)} {
		for _, p := range []string{"/metrics/cadvisor", "/metrics/resource", "/metrics/probes"} {
			if code, body := get(t, h, p); code != 200 || !strings.Contains(body, "probe_marker 1") {
				t.Errorf("GET %s = %d %q", p, code, body)
			}
		}
		cases := map[string]struct {
			code int
			body string
		}{
			"/stats/summary": {200, "{\n  \"only\": false\n}\n"},
			"/stats/summary?only_cpu_and_memory=true": {200, "{\n  \"only\": true\n}\n"},
			"/stats/summary?only_cpu_and_memory=yes":  {400, "only_cpu_and_memory: strconv.ParseBool: parsing \"yes\": invalid syntax\n"},
			"/stats/container":                        {501, "/stats/container is not implemented by kernelet yet\n"},
		}
		for p, want := range cases {
			if code, body := get(t, h, p); code != want.code || body != want.body {
				t.Errorf("GET %s = %d %q, want %d %q", p, code, body, want.code, want.body)
			}
		}
	}
}
