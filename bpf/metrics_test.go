package bpf

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type fakeStats []ProgramStats

func (f fakeStats) ProgramStats() []ProgramStats { return f }

func TestCollector(t *testing.T) {
	c := NewCollector(fakeStats{
		{Program: "oom_mark_victim", RunCount: 3, RunTime: 1500 * time.Microsecond},
		{Program: "reclaim_end", RunCount: 10, RunTime: time.Millisecond},
	})
	// A second tracer running the same program: the collector sums.
	c.Add(fakeStats{{Program: "oom_mark_victim", RunCount: 1, RunTime: 500 * time.Microsecond}})
	c.Add(fakeStats(nil)) // a closed tracer
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetType().String() != "COUNTER" || len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "program" {
				t.Errorf("%s: unexpected metric %v", mf.GetName(), m)
				continue
			}
			got[mf.GetName()+"{"+m.GetLabel()[0].GetValue()+"}"] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"kernelet_bpf_program_run_count_total{oom_mark_victim}":   4,
		"kernelet_bpf_program_run_count_total{reclaim_end}":       10,
		"kernelet_bpf_program_run_seconds_total{oom_mark_victim}": 0.002,
		"kernelet_bpf_program_run_seconds_total{reclaim_end}":     0.001,
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g < v-1e-12 || g > v+1e-12 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
