package sources

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestStartMergesSourcesAndStops(t *testing.T) {
	srv := newPodServer(t)
	srv.serve(http.StatusOK, manifest("u", "nginx"))
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f.yaml"), manifest("f", "nginx"))
	writeFile(t, filepath.Join(dir, "bad.yaml"), "kind: [")
	before := runtime.NumGoroutine()

	kc := &kubeletv1beta1.KubeletConfiguration{
		StaticPodPath:      dir,
		FileCheckFrequency: metav1.Duration{Duration: 20 * time.Millisecond},
		StaticPodURL:       srv.URL,
		StaticPodURLHeader: map[string][]string{"X-Node": {"node-1", "rack-7"}, "Authorization": {"Bearer s3cret"}},
		HTTPCheckFrequency: metav1.Duration{Duration: 20 * time.Millisecond},
	}
	_, ctx := ktesting.NewTestContext(t)
	s, err := Start(ctx, OptionsFromKubelet(kc, node))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case u := <-s.Updates():
			got = append(got, u.Source+"/"+describe([]Update{u}))
		case <-deadline:
			t.Fatalf("timed out: %v", got)
		}
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "file/ADD:f-node-1 http/ADD:u-node-1" {
		t.Errorf("updates %v", got)
	}
	waitUntil(t, "all sources seen", s.SeenAllSources)
	if ps := s.Problems(); len(ps) != 1 || ps[0].File != filepath.Join(dir, "bad.yaml") {
		t.Errorf("problems %v", ps)
	}
	if n := len(s.Pods()); n != 2 {
		t.Errorf("%d pods", n)
	}

	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, ok := <-s.Updates(); ok {
		t.Error("Updates not closed after Close")
	}
	// Every goroutine of the sources, the merger and the inotify watch
	// is gone (the server's side of the closed connection ends soon after).
	waitUntil(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestStartNothingConfigured(t *testing.T) {
	s, err := Start(t.Context(), Options{NodeName: node})
	if err != nil {
		t.Fatal(err)
	}
	if !s.SeenAllSources() || len(s.Problems()) != 0 {
		t.Error("no sources: seen, no problems")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
}

// failing is a source whose Run fails at once.
type failing struct{ name string }

func (f failing) Name() string                             { return f.name }
func (f failing) Run(context.Context, chan<- Update) error { return errors.New("no way") }
func (f failing) Problems() []Problem                      { return nil }

func TestStartExtraSources(t *testing.T) {
	if _, err := Start(t.Context(), Options{NodeName: node}, failing{SourceAPI}, failing{SourceAPI}); err == nil {
		t.Error("two sources of one name must be an error")
	}
	if _, err := Start(t.Context(), Options{StaticPodPath: "/m"}); err == nil {
		t.Error("no node name must be an error")
	}
	s, err := Start(t.Context(), Options{NodeName: node}, failing{SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if s.SeenAllSources() {
		t.Error("an extra source that sent nothing is not seen")
	}
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "api source: no way") {
		t.Errorf("Close: %v", err)
	}
}

func TestProblemJSONAndString(t *testing.T) {
	t.Parallel()
	p := Problem{Source: SourceFile, File: "/m/a.yaml", Doc: 2, Err: errors.New("bad"), Time: seenAt}
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"source":"file","file":"/m/a.yaml","doc":2,"error":"bad","time":"2026-05-01T12:00:00Z"}`; string(js) != want {
		t.Errorf("json %s, want %s", js, want)
	}
	if got := p.String(); got != "file source: /m/a.yaml: document 2: bad" {
		t.Errorf("string %q", got)
	}
	p.Doc = 0
	if got := p.String(); got != "file source: /m/a.yaml: bad" {
		t.Errorf("string %q", got)
	}
	if OpReconcile.String() != "RECONCILE" || Op(42).String() != "Op(42)" {
		t.Error("Op strings")
	}
}

func TestOptionsFromKubelet(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp(t.TempDir(), "m")
	if err != nil {
		t.Fatal(err)
	}
	kc := &kubeletv1beta1.KubeletConfiguration{StaticPodPath: dir, StaticPodURL: "http://h/p",
		FileCheckFrequency: metav1.Duration{Duration: time.Second}, HTTPCheckFrequency: metav1.Duration{Duration: 2 * time.Second},
		StaticPodURLHeader: map[string][]string{"A": {"b"}}}
	o := OptionsFromKubelet(kc, node)
	if o.StaticPodPath != dir || o.StaticPodURL != "http://h/p" || o.FileCheckFrequency != time.Second ||
		o.HTTPCheckFrequency != 2*time.Second || o.StaticPodURLHeader["A"][0] != "b" || o.NodeName != node {
		t.Errorf("%+v", o)
	}
}
