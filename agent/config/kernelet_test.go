package config

import (
	"errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kernelet/kernelet/eviction"
)

func TestLoadKerneletSecondDocument(t *testing.T) {
	cfg, err := Load("testdata/kernelet-second-document.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	k := cfg.Kernelet
	if k.EvictionMode != "kubelet" || !k.EvictionDryRun || k.EvictionCooldown.Duration != 5*time.Second || !k.PSINodeCondition || k.PLEGMode != PLEGRelist {
		t.Errorf("kernelet document not kept: %+v", k)
	}
	if c := cfg.Contention; len(c) != 2 || c[0].Type != eviction.ConditionSystemMemoryContentionPressure || c[0].Threshold != 10 ||
		c[1].Type != eviction.ConditionKubepodsMemoryContentionPressure || c[1].Threshold != 15 {
		t.Errorf("contention thresholds %+v", c)
	}
	if k.EvictionTick.Duration != eviction.KubeletModeTick {
		t.Errorf("kubelet mode's default tick %v", k.EvictionTick.Duration)
	}
	var sigs []string
	for _, th := range cfg.Thresholds {
		sigs = append(sigs, string(th.Signal)+" "+string(th.Operator)+" "+th.Value.String())
	}
	want := "memory.available LessThan 100Mi|allocatableMemory.available LessThan 100Mi|" +
		"kubepods.memory.pressure.some.avg10 GreaterThan 20%|memory.pressure.full.avg10 GreaterThan 10%"
	if got := strings.Join(sigs, "|"); got != want {
		t.Errorf("thresholds\n got %s\nwant %s", got, want)
	}
	// The defaults of a file without the document.
	cfg, err = Load("testdata/kubelet-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if k := cfg.Kernelet; k.EvictionMode != "kernelet" || k.EvictionTick.Duration != time.Second ||
		k.EvictionCooldown.Duration != 30*time.Second || k.EvictionDryRun || k.Kind != KerneletKind || k.PLEGMode != PLEGEvented {
		t.Errorf("kernelet defaults %+v", k)
	}
}

func TestLoadKerneletErrors(t *testing.T) {
	cfg, err := Load("testdata/kernelet-bad.yaml")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"testdata/kernelet-bad.yaml: 9 invalid value(s):",
		`testdata/kernelet-bad.yaml: KerneletConfiguration.psiContentionThresholds[MemoryContentionPressure]: Unsupported value: "MemoryContentionPressure": supported values: "SystemMemoryContentionPressure", "SystemDiskContentionPressure", "KubepodsMemoryContentionPressure", "KubepodsDiskContentionPressure"`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.plegMode: Unsupported value: "fast": supported values: "evented", "relist"`,
		`testdata/kernelet-bad.yaml: evictionHard[memory.pressure.some.avg10]: Invalid value: "memory.pressure.some.avg10": a PSI signal: set it in the KerneletConfiguration (kernelet.io/v1alpha1); kubelet rejects it here`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionDryRun: Invalid value: "yes please": wrong type or format`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionMode: Unsupported value: "fast": supported values: "kernelet", "kubelet"`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionTick: Invalid value: "-1s": must be greater than zero`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionHard[memory.available]: Invalid value: "memory.available": a kubelet signal: set it in the KubeletConfiguration`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionHard[io.pressure.full.avg10]: Invalid value: "120%": must be above 0% and below 100%`,
		`testdata/kernelet-bad.yaml: KerneletConfiguration.evictionSoftGracePeriod[cpu.pressure.some.avg10]: Required value: soft eviction threshold "cpu.pressure.some.avg10" needs a grace period`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in\n%s", want, msg)
		}
	}
	var warns []string
	for _, w := range cfg.Warnings {
		warns = append(warns, w.String())
	}
	wantWarns := "testdata/kernelet-bad.yaml:16: KerneletConfiguration.psiNodeConditon: unknown field (ignored)\n" +
		"testdata/kernelet-bad.yaml:17: KerneletConfiguration.evictionMode: duplicate field (first at line 8; the last value is used)"
	if got := strings.Join(warns, "\n"); got != wantWarns {
		t.Errorf("warnings\n%s\nwant\n%s", got, wantWarns)
	}
}

func TestKerneletDocumentPlacement(t *testing.T) {
	kubelet := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	kern := "apiVersion: kernelet.io/v1alpha1\nkind: KerneletConfiguration\n"
	cases := map[string]struct{ data, want string }{
		"kernelet first":   {kern + "---\n" + kubelet, `<document 1>: Invalid value: "KerneletConfiguration": the KubeletConfiguration must be the first document (kubelet reads only the first)`},
		"kernelet alone":   {kern, "the KubeletConfiguration must be the first document"},
		"two kernelet":     {kubelet + "---\n" + kern + "---\n" + kern, "<document 3>: Invalid value: \"\": a second KerneletConfiguration"},
		"another kind":     {kubelet + "---\napiVersion: v1\nkind: Pod\n", "<document 2>: Invalid value: \"\": only a KerneletConfiguration (kernelet.io/v1alpha1) may follow the KubeletConfiguration"},
		"wrong apiVersion": {kubelet + "---\napiVersion: kernelet.io/v1\nkind: KerneletConfiguration\n", `KerneletConfiguration.apiVersion: Invalid value: "kernelet.io/v1": must be kernelet.io/v1alpha1`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestKerneletConfigFileAndOverrides(t *testing.T) {
	data, err := os.ReadFile("testdata/kernelet-alone.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{KerneletFile: "testdata/kernelet-alone.yaml",
		KerneletOverrides: []KerneletOverride{func(k *KerneletConfiguration) { k.EvictionMode = "kubelet" }}}
	cfg, err := FromDefaultsWith(o, data)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Kernelet.EvictionDryRun || cfg.Kernelet.EvictionMode != "kubelet" || cfg.KerneletFile != o.KerneletFile {
		t.Errorf("kernelet file or override not applied: %+v", cfg.Kernelet)
	}
	last := cfg.Thresholds[len(cfg.Thresholds)-1]
	if last.Signal != eviction.SignalKubepodsMemoryPressureFull {
		t.Errorf("PSI threshold missing: %v", cfg.Thresholds)
	}
	// Errors of the separate file are reported under its name.
	o.KerneletOverrides = []KerneletOverride{func(k *KerneletConfiguration) { k.EvictionCooldown.Duration = -time.Second }}
	_, err = LoadWith("testdata/kubelet-config.yaml", o)
	if err == nil || !strings.Contains(err.Error(), "\n  testdata/kernelet-alone.yaml: KerneletConfiguration.evictionCooldown: Invalid value: \"-1s\": must be greater than zero") {
		t.Errorf("error of the kernelet file: %v", err)
	}
	// The same document in both places.
	_, err = LoadWith("testdata/kernelet-second-document.yaml", Options{KerneletFile: "testdata/kernelet-alone.yaml"})
	if err == nil || !strings.Contains(err.Error(), "the KerneletConfiguration is given twice") {
		t.Errorf("twice: %v", err)
	}
}

func TestDeployConfigLoads(t *testing.T) {
	cfg, err := Load("../../deploy/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings %v", cfg.Warnings)
	}
}

func TestValidateMemoryThrottle(t *testing.T) {
	kc := &KerneletConfiguration{EvictionDryRun: true, MemoryThrottle: MemoryThrottle{Enabled: true, MaxStall: "100%",
		Deadline: metav1.Duration{Duration: -time.Second}}}
	var got []string
	for _, e := range validateMemoryThrottle(kc, kerneletPath.Child("memoryThrottle")) {
		got = append(got, e.Error())
	}
	want := []string{
		`KerneletConfiguration.memoryThrottle.deadline: Invalid value: "-1s": must not be negative`,
		`KerneletConfiguration.memoryThrottle.maxStall: Invalid value: "100%": "100%": want a percentage above 0 and below 100, e.g. "25%"`,
		`KerneletConfiguration.memoryThrottle.enabled: Invalid value: true: not with evictionDryRun: a dry run changes no memory.high`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	on, err := MemoryThrottleConfig(MemoryThrottle{Enabled: true, MaxStall: "40%"})
	if err != nil || on.MaxStall != 0.4 || on.Deadline != 0 {
		t.Fatalf("MemoryThrottleConfig: %+v %v", on, err)
	}
	if off, err := MemoryThrottleConfig(MemoryThrottle{MaxStall: "40%"}); off != nil || err != nil {
		t.Fatalf("off: %+v %v", off, err)
	}
}
