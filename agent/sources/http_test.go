package sources

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kernelet/kernelet/internal/podutil"
)

// podServer serves whatever the test sets, after checking the headers.
type podServer struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	body     string
	delay    time.Duration
	requests int
	badHdr   []string
}

func newPodServer(t *testing.T) *podServer {
	ps := &podServer{status: http.StatusOK}
	ps.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ps.mu.Lock()
		ps.requests++
		status, body, delay := ps.status, ps.body, ps.delay
		if got := r.Header.Values("X-Node"); !slices.Equal(got, []string{"node-1", "rack-7"}) {
			ps.badHdr = append(ps.badHdr, "X-Node="+strings.Join(got, ","))
		}
		if got := r.Header.Get("Authorization"); got != "Bearer s3cret" {
			ps.badHdr = append(ps.badHdr, "Authorization="+got)
		}
		if r.Method != http.MethodGet {
			ps.badHdr = append(ps.badHdr, "method="+r.Method)
		}
		ps.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(func() {
		ps.Close()
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if len(ps.badHdr) > 0 {
			t.Errorf("requests without the configured headers: %v", ps.badHdr)
		}
	})
	return ps
}

func (ps *podServer) serve(status int, body string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.status, ps.body = status, body
}

func (ps *podServer) requestCount() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.requests
}

type urlHarness struct {
	src *URLSource
	m   *Merger
}

func startURL(t *testing.T, opts URLOptions) *urlHarness {
	t.Helper()
	opts.NodeName = node
	opts.Header = http.Header{"X-Node": {"node-1", "rack-7"}, "authorization": {"Bearer s3cret"}}
	if opts.Period == 0 {
		opts.Period = 20 * time.Millisecond
	}
	src, err := NewURLSource(opts)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMerger(SourceHTTP)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	go func() {
		m.Run(ctx)
		done <- struct{}{}
	}()
	go func() {
		if err := src.Run(ctx, m.Input(SourceHTTP)); err != nil {
			t.Errorf("Run: %v", err)
		}
		done <- struct{}{}
	}()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Error("URL source or merger did not stop")
				return
			}
		}
	})
	return &urlHarness{src: src, m: m}
}

func (h *urlHarness) waitProblem(t *testing.T, contains string) Problem {
	t.Helper()
	var found Problem
	waitUntil(t, "a problem containing "+contains, func() bool {
		for _, p := range h.src.Problems() {
			if strings.Contains(p.Err.Error(), contains) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func TestURLSource(t *testing.T) {
	srv := newPodServer(t)
	srv.serve(http.StatusOK, manifest("a", "nginx:1")+"---\n"+manifest("b", "nginx:1"))
	h := startURL(t, URLOptions{URL: srv.URL + "/pods"})
	collect(t, h.m.Updates(), "http/ADD:a-node-1,b-node-1")
	for _, p := range h.m.Pods() {
		if p.Annotations[podutil.AnnotationConfigSource] != SourceHTTP || p.Spec.NodeName != node || len(p.Spec.Tolerations) != 0 {
			t.Errorf("pod %s not defaulted as an http static pod: %v %v", p.Name, p.Annotations, p.Spec.Tolerations)
		}
	}

	// A server error keeps the last good set and is reported.
	srv.serve(http.StatusInternalServerError, "boom")
	p := h.waitProblem(t, "500 Internal Server Error")
	if !errors.Is(p.Err, ErrFetch) || p.File != srv.URL+"/pods" || p.Source != SourceHTTP {
		t.Errorf("problem %+v", p)
	}
	expectNone(t, h.m.Updates(), 100*time.Millisecond)

	// So does an unusable body, naming the document.
	srv.serve(http.StatusOK, manifest("a", "nginx:1")+"---\napiVersion: v1\nkind: Secret\n")
	p = h.waitProblem(t, "unsupported Secret")
	if p.Doc != 2 {
		t.Errorf("problem %+v: want document 2", p)
	}
	expectNone(t, h.m.Updates(), 100*time.Millisecond)

	// A PodList body.
	srv.serve(http.StatusOK, `{"apiVersion":"v1","kind":"PodList","items":[`+
		`{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}]}`)
	collect(t, h.m.Updates(), "http/REMOVE:a-node-1,b-node-1", "http/ADD:a-node-1")
	waitUntil(t, "problems to clear", func() bool { return len(h.src.Problems()) == 0 })

	// An empty PodList is the explicit empty set; an empty body is not.
	srv.serve(http.StatusOK, "")
	h.waitProblem(t, "no manifest")
	expectNone(t, h.m.Updates(), 100*time.Millisecond)
	srv.serve(http.StatusOK, "apiVersion: v1\nkind: PodList\nitems: []\n")
	collect(t, h.m.Updates(), "http/REMOVE:a-node-1")
}

func TestURLSourceNothingBeforeFirstGoodFetch(t *testing.T) {
	srv := newPodServer(t)
	srv.serve(http.StatusNotFound, "")
	h := startURL(t, URLOptions{URL: srv.URL})
	h.waitProblem(t, "404 Not Found")
	waitUntil(t, "a few requests", func() bool { return srv.requestCount() >= 3 })
	if h.m.SeenAllSources() {
		t.Fatal("a URL that never answered must not count as seen")
	}
	srv.serve(http.StatusOK, manifest("a", "nginx"))
	collect(t, h.m.Updates(), "http/ADD:a-node-1")
	waitUntil(t, "seen", h.m.SeenAllSources)
}

func TestURLSourceTimeout(t *testing.T) {
	srv := newPodServer(t)
	srv.serve(http.StatusOK, manifest("a", "nginx"))
	h := startURL(t, URLOptions{URL: srv.URL, Period: 50 * time.Millisecond, Timeout: 20 * time.Millisecond})
	collect(t, h.m.Updates(), "http/ADD:a-node-1")
	srv.mu.Lock()
	srv.delay = time.Second
	srv.mu.Unlock()
	h.waitProblem(t, "context deadline exceeded")
	expectNone(t, h.m.Updates(), 100*time.Millisecond)
	if len(h.m.Pods()) != 1 {
		t.Error("a timeout must keep the last good set")
	}
}

func TestURLSourceUnchangedBodyIsQuiet(t *testing.T) {
	srv := newPodServer(t)
	srv.serve(http.StatusOK, manifest("a", "nginx"))
	h := startURL(t, URLOptions{URL: srv.URL})
	collect(t, h.m.Updates(), "http/ADD:a-node-1")
	seen := h.m.Pods()[0].Annotations[podutil.AnnotationConfigSeen]
	n := srv.requestCount()
	waitUntil(t, "more requests", func() bool { return srv.requestCount() >= n+3 })
	expectNone(t, h.m.Updates(), 50*time.Millisecond)
	if got := h.m.Pods()[0].Annotations[podutil.AnnotationConfigSeen]; got != seen {
		t.Errorf("seen changed from %s to %s", seen, got)
	}
}

func TestNewURLSourceOptions(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "ftp://x/pods", "http://", "://"} {
		if _, err := NewURLSource(URLOptions{URL: u, NodeName: node}); err == nil {
			t.Errorf("%q: want an error", u)
		}
	}
	if _, err := NewURLSource(URLOptions{URL: "http://x/pods"}); err == nil {
		t.Error("no node name must be an error")
	}
	s, err := NewURLSource(URLOptions{URL: "https://x/pods", NodeName: node, Period: 5 * time.Second})
	if err != nil || s.opts.Timeout != 5*time.Second || s.Name() != SourceHTTP {
		t.Errorf("timeout must not exceed the period: %+v %v", s.opts, err)
	}
}
