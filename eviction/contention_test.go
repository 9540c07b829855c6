package eviction

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestContentionPressure(t *testing.T) {
	const thr = 10
	for name, c := range map[string]struct {
		was          bool
		known        bool
		avg10, avg60 float64
		want         bool
	}{
		"quiet stays False":                        {false, true, 2, 3, false},
		"avg60 high but avg10 below: not yet True": {false, true, 4, 12, false},
		"avg10 spike alone: not True":              {false, true, 40, 5, false},
		"both at the threshold: True":              {false, true, 10, 10, true},
		"both above: True":                         {false, true, 30, 15, true},
		"True, trending lower: stays True":         {true, true, 3, 11, true},
		"True, avg60 below: False":                 {true, true, 30, 9.99, false},
		"unknown keeps True":                       {true, false, 0, 0, true},
		"unknown keeps False":                      {false, false, 99, 99, false},
	} {
		t.Run(name, func(t *testing.T) {
			got := ContentionPressure(c.was, ContentionSample{Threshold: thr, Known: c.known, Avg10: c.avg10, Avg60: c.avg60})
			if got != c.want {
				t.Errorf("ContentionPressure = %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseContentionThresholds(t *testing.T) {
	got, errs := ParseContentionThresholds(map[string]string{
		"KubepodsDiskContentionPressure": "7%", "SystemMemoryContentionPressure": "12.5",
	}, field.NewPath("KerneletConfiguration", "psiContentionThresholds"))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(got) != 2 || got[0].Type != ConditionSystemMemoryContentionPressure || got[0].Threshold != 12.5 ||
		got[1].Type != ConditionKubepodsDiskContentionPressure || got[1].Threshold != 7 {
		t.Errorf("parsed %+v", got)
	}
	_, errs = ParseContentionThresholds(map[string]string{
		"MemoryContentionPressure": "10%", "SystemDiskContentionPressure": "0%", "KubepodsMemoryContentionPressure": "x",
	}, field.NewPath("KerneletConfiguration", "psiContentionThresholds"))
	msg := errs.ToAggregate().Error()
	for _, want := range []string{
		`psiContentionThresholds[MemoryContentionPressure]: Unsupported value`,
		`psiContentionThresholds[SystemDiskContentionPressure]: Invalid value: "0%": must be above 0% and below 100%`,
		`psiContentionThresholds[KubepodsMemoryContentionPressure]: Invalid value: "x"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors %q lack %q", msg, want)
		}
	}
}

func TestContentionTextAndSource(t *testing.T) {
	r, m := ContentionText(ConditionSystemMemoryContentionPressure, true)
	if r != "KubeletHasSystemMemoryContentionPressure" || m != "kubelet has SystemMemoryContentionPressure" {
		t.Errorf("True text %q %q", r, m)
	}
	r, m = ContentionText(ConditionKubepodsDiskContentionPressure, false)
	if r != "KubeletHasNoKubepodsDiskContentionPressure" || m != "kubelet has no KubepodsDiskContentionPressure" {
		t.Errorf("False text %q %q", r, m)
	}
	for _, c := range []struct {
		typ      string
		kubepods bool
		res      string
	}{
		{"SystemMemoryContentionPressure", false, "memory"}, {"SystemDiskContentionPressure", false, "io"},
		{"KubepodsMemoryContentionPressure", true, "memory"}, {"KubepodsDiskContentionPressure", true, "io"},
	} {
		k, res := ContentionSource(v1.NodeConditionType(c.typ))
		if k != c.kubepods || string(res) != c.res {
			t.Errorf("%s: source %v %s", c.typ, k, res)
		}
	}
}
