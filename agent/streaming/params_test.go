package streaming

import (
	"errors"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
)

func TestParseTarget(t *testing.T) {
	cases := map[string]struct {
		rest          string
		withContainer bool
		want          Target
		ok            bool
	}{
		"container":           {"ns/pod/c", true, Target{Namespace: "ns", Pod: "pod", Container: "c"}, true},
		"uid and container":   {"ns/pod/uid/c", true, Target{Namespace: "ns", Pod: "pod", UID: "uid", Container: "c"}, true},
		"missing container":   {"ns/pod", true, Target{}, false},
		"empty segment":       {"ns//c", true, Target{}, false},
		"too many":            {"a/b/c/d/e", true, Target{}, false},
		"port-forward":        {"ns/pod", false, Target{Namespace: "ns", Pod: "pod"}, true},
		"port-forward uid":    {"ns/pod/uid", false, Target{Namespace: "ns", Pod: "pod", UID: "uid"}, true},
		"port-forward single": {"ns", false, Target{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseTarget(tc.rest, tc.withContainer)
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseTarget(%q) = %+v, %v", tc.rest, got, ok)
			}
		})
	}
}

func TestParseOptions(t *testing.T) {
	cases := map[string]struct {
		query   string
		want    Options
		wantErr error
	}{
		"all":             {"input=1&output=1&error=1", Options{Stdin: true, Stdout: true, Stderr: true}, nil},
		"tty drops error": {"input=1&output=1&error=1&tty=1", Options{Stdin: true, Stdout: true, TTY: true}, nil},
		"true is not 1":   {"output=true", Options{}, ErrNoStreams},
		"none":            {"tty=1", Options{TTY: true}, ErrNoStreams},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			got, err := ParseOptions(q)
			if !errors.Is(err, tc.wantErr) || got != tc.want {
				t.Errorf("ParseOptions(%q) = %+v, %v", tc.query, got, err)
			}
		})
	}
}

func TestPorts(t *testing.T) {
	r := httptest.NewRequest("GET", "/portForward/ns/p?port=80&port=8080,9090", nil)
	if p, err := Ports(r); err != nil || p != nil {
		t.Errorf("SPDY request: ports %v, %v; want none", p, err)
	}
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Connection", "Upgrade")
	if p, err := Ports(r); err != nil || !slices.Equal(p, []int32{80, 8080, 9090}) {
		t.Errorf("WebSocket request: ports %v, %v", p, err)
	}
	for _, q := range []string{"", "port=0", "port=x", "port=70000"} {
		r := httptest.NewRequest("GET", "/portForward/ns/p?"+q, nil)
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Connection", "Upgrade")
		if _, err := Ports(r); err == nil {
			t.Errorf("%q: want an error", q)
		}
	}
}

func TestRunCommand(t *testing.T) {
	q, _ := url.ParseQuery("cmd=ls+-l+/")
	if got := RunCommand(q); !slices.Equal(got, []string{"ls", "-l", "/"}) {
		t.Errorf("RunCommand = %q", got)
	}
}
