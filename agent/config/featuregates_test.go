package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestFeatureGatesValidation(t *testing.T) {
	cases := map[string]struct {
		gates string
		want  []string // the errors, whole
	}{
		"unknown": {"Nope: true", []string{`featureGates[Nope]: Invalid value: true: unrecognized feature gate: Nope`}},
		"locked to the other value": {"InPlacePodVerticalScaling: false",
			[]string{`featureGates[InPlacePodVerticalScaling]: Invalid value: false: cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true`}},
		"beta kernelet lacks, on": {"GracefulNodeShutdown: true",
			[]string{`featureGates[GracefulNodeShutdown]: Invalid value: true: kernelet does not implement GracefulNodeShutdown (BETA, default true in kubelet v1.37.2): no graceful node shutdown (shutdownGracePeriod above 0 is refused); remove it or set it to false`}},
		"beta kernelet lacks, off": {"GracefulNodeShutdown: false\nGracefulNodeShutdownBasedOnPodPriority: false\nWindowsGracefulNodeShutdown: false", nil},
		"off with its dependants on": {"GracefulNodeShutdown: false", []string{
			`featureGates[GracefulNodeShutdownBasedOnPodPriority]: Invalid value: true: GracefulNodeShutdownBasedOnPodPriority is enabled, but depends on features that are disabled: [GracefulNodeShutdown]`,
			`featureGates[WindowsGracefulNodeShutdown]: Invalid value: true: WindowsGracefulNodeShutdown is enabled, but depends on features that are disabled: [GracefulNodeShutdown]`}},
		"alpha kernelet lacks, on": {"CRIListStreaming: true",
			[]string{`featureGates[CRIListStreaming]: Invalid value: true: kernelet does not implement CRIListStreaming (ALPHA, default false in kubelet v1.37.2): the runtime is listed with the unary List RPCs; remove it or set it to false`}},
		"implemented alpha, EventedPLEG on": {"EventedPLEG: true", nil},
		"locked GA kernelet lacks": {"KubeletTracing: true",
			[]string{`featureGates[KubeletTracing]: Invalid value: true: kernelet does not implement KubeletTracing (GA in kubelet v1.37.2): no OpenTelemetry traces; remove it`}},
		"locked GA implemented, watchdog": {"SystemdWatchdog: true", nil},
		"locked GA implemented":           {"DRAExtendedResource: true", nil},
		"implemented, off": {"ReloadKubeletClientCAFile: false",
			[]string{`featureGates[ReloadKubeletClientCAFile]: Invalid value: false: kernelet always acts as ReloadKubeletClientCAFile=true (BETA, default true in kubelet v1.37.2): authentication.x509.clientCAFile is loaded again when it changes; remove it or set it to true`}},
		"implemented, on":       {"ReloadKubeletClientCAFile: true\nImageMaximumGCAge: true", nil},
		"implemented alpha, on": {"PodLogsQuerySplitStreams: true", nil},
		"library default kept":  {"WatchListClient: true\nClientsPreferCBOR: false", nil},
		"library default changed": {"WatchListClient: false",
			[]string{`featureGates[WatchListClient]: Invalid value: false: kernelet keeps WatchListClient at its default, true (BETA, default true in kubelet v1.37.2): client-go; remove it or set it to true`}},
		"another component's gate": {"MutatingAdmissionPolicy: false\nSchedulerAsyncAPICalls: true", nil},
		"windows gate":             {"WindowsGracefulNodeShutdown: false", nil},
		"dependency off": {"MatchLabelKeysInPodTopologySpread: false",
			[]string{`featureGates[MatchLabelKeysInPodTopologySpreadSelectorMerge]: Invalid value: true: MatchLabelKeysInPodTopologySpreadSelectorMerge is enabled, but depends on features that are disabled: [MatchLabelKeysInPodTopologySpread]`}},
		"unknown stops the dependency check": {"Nope: false\nMatchLabelKeysInPodTopologySpread: false",
			[]string{`featureGates[Nope]: Invalid value: false: unrecognized feature gate: Nope`}},
		"all alpha off": {"AllAlpha: false\nAllBeta: false", nil},
		// kubelet refuses AllAlpha alone too: alpha gates that need the
		// beta GenericWorkload, off by default.
		"all alpha on": {"AllAlpha: true", []string{`featureGates[AllAlpha]: Invalid value: true: turns on `,
			`featureGates[CompositePodGroup]: Invalid value: true: CompositePodGroup is enabled, but depends on features that are disabled: [GenericWorkload]`,
			`featureGates[PodGroupPreemptionPolicy]: `, `featureGates[TopologyAwareWorkloadScheduling]: `, `featureGates[WorkloadWithJob]: `}},
		"all beta on":     {"AllBeta: true", []string{`featureGates[AllBeta]: Invalid value: true: turns on `}},
		"several at once": {"Nope: true\nKubeletTracing: true", []string{`featureGates[KubeletTracing]: `, `featureGates[Nope]: `}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var gates string
			for _, l := range strings.Split(tc.gates, "\n") {
				gates += "  " + l + "\n"
			}
			_, err := Parse("cfg.yaml", []byte(header+"featureGates:\n"+gates))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("must load: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want a validation error, got %v", err)
			}
			var got []string
			for _, e := range ce.Errs {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors:\n %s\nwant %d", strings.Join(got, "\n "), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) || (!strings.HasSuffix(w, " ") && got[i] != w) {
					t.Errorf("error\n %s\nwant\n %s", got[i], w)
				}
			}
		})
	}
}

// AllAlpha and AllBeta name the gates they would turn on that kernelet
// lacks, but not those set on their own nor those kernelet implements.
func TestAllAlphaAllBeta(t *testing.T) {
	_, err := Parse("cfg.yaml", []byte(header+"featureGates: {AllAlpha: true, CRIListStreaming: false}\n"))
	msg := err.Error()
	for _, s := range []string{"alpha gates kernelet does not implement (", "set them false or remove AllAlpha"} {
		if !strings.Contains(msg, s) {
			t.Errorf("AllAlpha: %q missing in %s", s, msg)
		}
	}
	if strings.Contains(msg, "CRIListStreaming") || strings.Contains(msg, "EventedPLEG") || strings.Contains(msg, "PodLogsQuerySplitStreams") {
		t.Errorf("AllAlpha names a gate set on its own or implemented: %s", msg)
	}
	_, err = Parse("cfg.yaml", []byte(header+"featureGates: {AllBeta: true}\n"))
	if msg := err.Error(); !strings.Contains(msg, "PodAndContainerStatsFromCRI") || strings.Contains(msg, "MutatingAdmissionPolicy") {
		t.Errorf("AllBeta: %s", msg)
	}
}

func TestFeatureGateWarnings(t *testing.T) {
	cfg, err := Parse("cfg.yaml", []byte(header+"featureGates: {ImageMaximumGCAge: true, PodLogsQuerySplitStreams: true, ChangeContainerStatusOnKubeletRestart: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		"cfg.yaml: featureGates.ChangeContainerStatusOnKubeletRestart: setting DEPRECATED feature gate ChangeContainerStatusOnKubeletRestart=true. It will be removed in a future release.",
		"cfg.yaml: featureGates.ImageMaximumGCAge: setting GA feature gate ImageMaximumGCAge=true. It will be removed in a future release.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
}

func TestFeatureEnabled(t *testing.T) {
	cases := map[string]struct {
		set  map[string]bool
		gate string
		want bool
	}{
		"default on":              {nil, "PodLevelResources", true},
		"default off":             {nil, "EventedPLEG", false},
		"set":                     {map[string]bool{"EventedPLEG": true}, "EventedPLEG", true},
		"all alpha":               {map[string]bool{"AllAlpha": true}, "EventedPLEG", true},
		"all alpha, own value":    {map[string]bool{"AllAlpha": true, "EventedPLEG": false}, "EventedPLEG", false},
		"all alpha, not beta":     {map[string]bool{"AllAlpha": true}, "PodAndContainerStatsFromCRI", false},
		"all beta off":            {map[string]bool{"AllBeta": false}, "PodLevelResources", false},
		"all beta leaves GA":      {map[string]bool{"AllBeta": false}, "ImageMaximumGCAge", true},
		"unknown":                 {nil, "Nope", false},
		"all alpha is not itself": {map[string]bool{}, "AllAlpha", false},
	}
	for name, tc := range cases {
		cfg := Default()
		cfg.Kubelet.FeatureGates = tc.set
		if got := FeatureEnabled(&cfg.Kubelet, tc.gate); got != tc.want {
			t.Errorf("%s: %s = %t, want %t", name, tc.gate, got, tc.want)
		}
	}
}

// The generated table agrees with itself and with what upstream says of a
// few gates (a check of the generator), and kernelet decides about every
// gate kubelet's code reads.
func TestFeatureGateTable(t *testing.T) {
	if kubeletGatesVersion != "v1.37.2" || len(kubeletGates) < 200 {
		t.Fatalf("table of %s with %d gates", kubeletGatesVersion, len(kubeletGates))
	}
	for name, g := range kubeletGates {
		for _, dep := range g.Requires {
			if _, ok := kubeletGates[dep]; !ok {
				t.Errorf("%s requires an unknown gate %s", name, dep)
			}
		}
		if g.Locked && g.Stage != StageGA && g.Stage != StageDeprecated {
			t.Errorf("%s is locked at stage %s", name, g.Stage)
		}
		if _, ok := kerneletGates[name]; g.Kubelet && !ok {
			t.Errorf("kubelet's code reads %s: say in featuregates_kernelet.go what kernelet does about it", name)
		}
	}
	for name, want := range map[string]FeatureGate{
		"AllAlpha":                   {Stage: StageAlpha},
		"NodeSwap":                   {Stage: StageGA, Default: true, Locked: true, Kubelet: true},
		"CustomCPUCFSQuotaPeriod":    {Stage: StageGA, Default: true, Kubelet: true},
		"DRAFractionalCapacityRange": {Stage: StageBeta, Requires: []string{"DRAConsumableCapacity"}}, // 1.37's default-on spec needs min compatibility 1.37
		"WatchListClient":            {Stage: StageBeta, Default: true},
		"SystemdWatchdog":            {Stage: StageGA, Default: true, Locked: true},
	} {
		g := kubeletGates[name]
		if g.Stage != want.Stage || g.Default != want.Default || g.Locked != want.Locked || g.Kubelet != want.Kubelet || !slices.Equal(g.Requires, want.Requires) {
			t.Errorf("%s = %+v, want %+v", name, g, want)
		}
	}
}

// Every decision names a gate of the table, is consistent with the gate's
// lock, and an Implemented node gate on by default, or one acted on either
// way, names a test that exists (docs/features.md lists it).
func TestKerneletGateDecisions(t *testing.T) {
	testRE := regexp.MustCompile(`^([a-z0-9/]+)\.(Test[A-Za-z0-9_]+)$`)
	for name, d := range kerneletGates {
		g, ok := kubeletGates[name]
		if !ok {
			t.Errorf("decision about %s, which kubelet %s does not know", name, kubeletGatesVersion)
			continue
		}
		if d.what == "" {
			t.Errorf("%s: say what kernelet does", name)
		}
		if d.support == Implemented && g.Locked && !g.Default {
			t.Errorf("%s: locked to false, kernelet cannot implement it", name)
		}
		if d.library != (d.support == LibraryDefault) {
			t.Errorf("%s: library gates, and only they, keep the library's default", name)
		}
		if d.support == BothValues && (g.Locked || d.test == "") {
			t.Errorf("%s: a gate acted on either way is not locked and names its test", name)
		}
		if d.support != Implemented && d.support != BothValues {
			if d.test != "" {
				t.Errorf("%s: a test named for a gate kernelet does not implement", name)
			}
			continue
		}
		if d.test == "" {
			if g.Default && g.Stage != StageDeprecated {
				t.Errorf("%s: an implemented gate on by default names its test", name)
			}
			continue
		}
		m := testRE.FindStringSubmatch(d.test)
		if m == nil {
			t.Errorf("%s: test %q is not dir.TestName", name, d.test)
			continue
		}
		if !testExists(t, filepath.Join("..", "..", m[1]), m[2]) {
			t.Errorf("%s: no func %s in %s", name, m[2], m[1])
		}
	}
}

// testExists tells whether a _test.go file of dir declares func name.
func testExists(t *testing.T, dir, name string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Errorf("no tests in %s: %v", dir, err)
		return false
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc "+name+"(") {
			return true
		}
	}
	return false
}

// The gates kernelet acts on either way: false is accepted (the upstream
// node e2e CPU manager suite sets all three false); CustomCPUCFSQuotaPeriod
// off refuses a cpuCFSQuotaPeriod other than 100ms with kubelet's words;
// PodLevelResources off alone is kubelet's dependency error.
func TestGatesOff(t *testing.T) {
	off := "featureGates: {PodLevelResources: false, InPlacePodLevelResourcesVerticalScaling: false, CustomCPUCFSQuotaPeriod: false,\n  PodLevelResourcesFixDefaulting: false, PodLevelResourcesFixKubeletQOSClass: false}\n"
	cfg, err := Parse("cfg.yaml", []byte(header+off))
	if err != nil {
		t.Fatalf("must load: %v", err)
	}
	for _, g := range []string{"PodLevelResources", "InPlacePodLevelResourcesVerticalScaling", "CustomCPUCFSQuotaPeriod"} {
		if FeatureEnabled(&cfg.Kubelet, g) {
			t.Errorf("%s on", g)
		}
	}
	if _, err := Parse("cfg.yaml", []byte(header+off+"cpuCFSQuotaPeriod: 100ms\n")); err != nil {
		t.Errorf("the default period with the gate off: %v", err)
	}
	_, err = Parse("cfg.yaml", []byte(header+off+"cpuCFSQuotaPeriod: 50ms\n"))
	if err == nil || !strings.Contains(err.Error(), `cpuCFSQuotaPeriod: Invalid value: "50ms": requires feature gate CustomCPUCFSQuotaPeriod`) {
		t.Errorf("50ms with the gate off: %v", err)
	}
	if _, err := Parse("cfg.yaml", []byte(header+"cpuCFSQuotaPeriod: 50ms\n")); err != nil {
		t.Errorf("50ms with the gate on: %v", err)
	}
	_, err = Parse("cfg.yaml", []byte(header+"featureGates: {PodLevelResources: false}\n"))
	if err == nil || !strings.Contains(err.Error(), "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that are disabled: [PodLevelResources]") {
		t.Errorf("PodLevelResources off alone: %v (kubelet's dependency error)", err)
	}
}
