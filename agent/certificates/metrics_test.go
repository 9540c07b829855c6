package certificates

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	certificatesv1 "k8s.io/api/certificates/v1"

	"github.com/kernelet/kernelet/internal/clientset"
	"github.com/kernelet/kernelet/internal/clientset/clientsettest"
)

func TestTTLSeconds(t *testing.T) {
	ca := newTestCA(t)
	// certificates hold whole seconds; now is half a second past one
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(500 * time.Millisecond)
	pair := func(notAfter time.Time) *tls.Certificate {
		c, k := ca.issue(t, "system:node:a", base.Add(-time.Hour), notAfter)
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	for name, tc := range map[string]struct {
		cert *tls.Certificate
		want float64
	}{
		"none":      {nil, math.Inf(1)},
		"no leaf":   {&tls.Certificate{}, math.Inf(1)},
		"valid":     {pair(base.Add(91 * time.Second)), 90},
		"expired":   {pair(base.Add(-30 * time.Second)), -30},
		"truncated": {pair(base.Add(time.Second)), 0},
	} {
		t.Run(name, func(t *testing.T) {
			if got := TTLSeconds(now, tc.cert); got != tc.want {
				t.Errorf("TTLSeconds = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMetricsExposition: kubelet's names, types and help, no labels, as
// /metrics shows them before any renewal.
func TestMetricsExposition(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range append(ClientMetrics(nil), ServingMetrics(nil)...) {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"kubelet_certificate_manager_client_ttl_seconds":             "gauge",
		"kubelet_certificate_manager_client_expiration_renew_errors": "counter",
		"kubelet_certificate_manager_server_ttl_seconds":             "gauge",
		"kubelet_server_expiration_renew_errors":                     "counter",
		"kubelet_certificate_manager_server_rotation_seconds":        "histogram",
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != len(want) {
		t.Errorf("%d families, want %d", len(fams), len(want))
	}
	for _, f := range fams {
		typ, ok := want[f.GetName()]
		if !ok || strings.ToLower(f.GetType().String()) != typ {
			t.Errorf("%s is a %v, want %q", f.GetName(), f.GetType(), typ)
		}
		if len(f.GetMetric()) != 1 || len(f.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: %d series with labels, want one without", f.GetName(), len(f.GetMetric()))
		}
		if g := f.GetMetric()[0].GetGauge(); g != nil && !math.IsInf(g.GetValue(), 1) {
			t.Errorf("%s = %v without a certificate, want +Inf", f.GetName(), g.GetValue())
		}
	}
}

// TestRenewalMetrics: a renewal that fails counts one error; one that
// replaces a certificate observes how long the old one lived from its
// NotBefore, and the TTL gauge follows the current certificate.
func TestRenewalMetrics(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now().Truncate(time.Second) // certificates hold whole seconds
	old, oldKey := ca.issue(t, "system:node:a", now.Add(-10*time.Minute), now.Add(time.Minute))
	dir := t.TempDir()
	cs := fakeSigner(t, ca, false)
	broken := true
	r := &Rotator{
		name: "serving-certificate", store: fileStore{dir: dir, prefix: ServingPrefix, now: time.Now},
		signer: certificatesv1.KubeletServingSignerName, usages: ServingUsages,
		client: func() (clientset.CSRClient, error) {
			if broken {
				return nil, errors.New("no client")
			}
			return clientsettest.FromClientset(cs).CertificateSigningRequests(), nil
		},
		now: func() time.Time { return now }, uniform: defaultUniform,
	}
	ms := ServingMetrics(r)
	ttl, failures, age := ms[0], ms[1].(prometheus.Counter), ms[2].(prometheus.Histogram)
	if _, err := r.store.Update(old, oldKey); err != nil {
		t.Fatal(err)
	}
	if err := r.load(); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(ttl); v < 0 || v > 60 {
		t.Errorf("ttl %v with a certificate valid for a minute", v)
	}
	tmpl := ServingTemplate("a", []string{"a"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := r.renew(ctx, tmpl); err == nil {
		t.Fatal("a renewal without a client succeeded")
	}
	if v := testutil.ToFloat64(failures); v != 1 {
		t.Errorf("renew errors %v, want 1", v)
	}
	broken = false
	if err := r.renew(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(failures); v != 1 {
		t.Errorf("renew errors %v after a success, want 1", v)
	}
	var m dto.Metric
	if err := age.Write(&m); err != nil {
		t.Fatal(err)
	}
	if h := m.GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != (10*time.Minute).Seconds() {
		t.Errorf("rotation age: %d observations summing %v s, want one of 600 s", h.GetSampleCount(), h.GetSampleSum())
	}
	// the fake signer's certificate lives an hour
	if v := testutil.ToFloat64(ttl); v < 3500 || v > 3600 {
		t.Errorf("ttl %v after the renewal, want about 3600", v)
	}
}
