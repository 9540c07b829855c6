package promreg

import (
	"errors"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := prometheus.NewCounter(prometheus.CounterOpts{Name: "a_total", Help: "a"})
	b := prometheus.NewGauge(prometheus.GaugeOpts{Name: "b", Help: "b"})
	if err := Register(reg, a, b); err != nil {
		t.Fatal(err)
	}
	if fams, _ := reg.Gather(); len(fams) != 2 {
		t.Errorf("gathered %d families, want 2", len(fams))
	}
	var are prometheus.AlreadyRegisteredError
	if err := Register(reg, b); !errors.As(err, &are) {
		t.Errorf("registering b twice: %v, want AlreadyRegisteredError", err)
	}
}

func TestNames(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "b_seconds", Help: "h"})
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a_total", Help: "c"}, []string{"x"})
	// The vector has no sample yet: still named; the histogram by its base name.
	if got := Names(v); !slices.Equal(got, []string{"a_total"}) {
		t.Errorf("Names(vector) = %q", got)
	}
	if got := Names(h); !slices.Equal(got, []string{"b_seconds"}) {
		t.Errorf("Names(histogram) = %q", got)
	}
}
