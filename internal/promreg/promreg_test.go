package promreg

import (
	"errors"
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
