package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
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
	api.RunningPods = func(context.Context) (any, error) { return nil, errors.New("cri down") }
	if code, _ := get(t, SecureHandler(api), "/runningpods/"); code != 500 {
		t.Errorf("runningpods with a failing runtime = %d, want 500", code)
	}
}
