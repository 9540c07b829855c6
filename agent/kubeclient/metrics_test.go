package kubeclient

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// A request of a client-go client is counted and timed in every registry
// the metrics are registered with.
func TestRestClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	for _, reg := range regs {
		if err := RegisterMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	c, err := rest.UnversionedRESTClientFor(&rest.Config{Host: srv.URL,
		ContentConfig: rest.ContentConfig{NegotiatedSerializer: serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Get().AbsPath("/ok").Do(t.Context())
	_ = c.Get().AbsPath("/missing").Do(t.Context())
	u, _ := url.Parse(srv.URL)
	m := sharedRestMetrics()
	for code, want := range map[string]float64{"200": 1, "404": 1} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(code, "GET", u.Host)); got != want {
			t.Errorf("rest_client_requests_total{code=%q} = %v, want %v", code, got, want)
		}
	}
	for i, reg := range regs {
		n, err := testutil.GatherAndCount(reg, "rest_client_requests_total", "rest_client_request_duration_seconds")
		if err != nil || n != 3 {
			t.Errorf("registry %d: %d series of requests and durations (%v), want 3", i, n, err)
		}
		if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
			t.Errorf("registry %d: lint %v %v", i, problems, err)
		}
	}
}
