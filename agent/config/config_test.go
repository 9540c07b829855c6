package config

import (
	"errors"
	"strings"
	"testing"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func TestLoadRealClusterConfig(t *testing.T) {
	cfg, err := Load("testdata/kubelet-config.yaml")
	if err != nil {
		t.Fatalf("the real cluster config must validate: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("unexpected warnings: %v", cfg.Warnings)
	}
	kc := cfg.Kubelet
	if kc.CgroupDriver != "systemd" || *kc.HealthzPort != 10248 || kc.EvictionPressureTransitionPeriod.Duration.String() != "5m0s" {
		t.Errorf("file values not kept: driver=%s healthz=%d transition=%s", kc.CgroupDriver, *kc.HealthzPort, kc.EvictionPressureTransitionPeriod.Duration)
	}
	if kc.ContainerRuntimeEndpoint != DefaultContainerRuntimeEndpoint || kc.MemoryThrottlingFactor != nil || kc.MemoryReservationPolicy != "None" {
		t.Errorf("defaults not applied: endpoint=%q factor=%v (kubelet v1.37: unset) reservation=%q",
			kc.ContainerRuntimeEndpoint, kc.MemoryThrottlingFactor, kc.MemoryReservationPolicy)
	}
	// The file sets four hard thresholds (the default inodesFree for imagefs
	// is dropped); enforceNodeAllocatable=[pods] mirrors memory.available.
	var sigs []string
	for _, th := range cfg.Thresholds {
		sigs = append(sigs, string(th.Signal)+"<"+th.Value.String())
	}
	want := "imagefs.available<15%,memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,allocatableMemory.available<100Mi"
	if got := strings.Join(sigs, ","); got != want {
		t.Errorf("thresholds = %s, want %s", got, want)
	}
}

func TestLoadAcceptanceBadFile(t *testing.T) {
	_, err := Load("testdata/bad-eviction-and-duration.yaml")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"testdata/bad-eviction-and-duration.yaml",
		`evictionHard[memory.available]: Invalid value: "lots"`,
		`nodeStatusUpdateFrequency: Invalid value: "-1s": must be greater than zero`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	if len(ce.Errs) != 2 {
		t.Errorf("want exactly 2 errors, got %d:\n%s", len(ce.Errs), msg)
	}
}

func TestWarningsForUnknownAndDuplicateFields(t *testing.T) {
	cfg, err := Load("testdata/warnings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		`testdata/warnings.yaml:4: notAKubeletField: unknown field (ignored)`,
		`testdata/warnings.yaml:7: authentication.x509.clientCAFIle: unknown field (ignored)`,
		"testdata/warnings.yaml:8: maxPods: duplicate field (first at line 3; the last value is used)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cfg.Kubelet.MaxPods != 60 {
		t.Errorf("duplicate: last value must win, maxPods=%d", cfg.Kubelet.MaxPods)
	}
}

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

// One bad value for every validated field group; each must be reported by
// its field path with its reason.
func TestValidateFieldGroups(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want []string
	}{
		"eviction hard quantity":      {"evictionHard: {memory.available: lots}", []string{`evictionHard[memory.available]: Invalid value: "lots"`}},
		"eviction unknown signal":     {"evictionHard: {memory.free: 1Gi}", []string{`evictionHard[memory.free]: Unsupported value`}},
		"eviction soft without grace": {"evictionSoft: {memory.available: 1Gi}", []string{`evictionSoftGracePeriod[memory.available]: Required value`}},
		"eviction min-reclaim":        {"evictionMinimumReclaim: {nodefs.available: 120%}", []string{`evictionMinimumReclaim[nodefs.available]: Invalid value: "120%"`}},
		"eviction transition period":  {"evictionPressureTransitionPeriod: -5m", []string{`evictionPressureTransitionPeriod: Invalid value: "-5m0s": must not be negative`}},
		"duration negative":           {"nodeStatusUpdateFrequency: -1s", []string{`nodeStatusUpdateFrequency: Invalid value: "-1s"`}},
		"duration not a duration":     {"syncFrequency: often", []string{`syncFrequency: Invalid value: "often": wrong type or format`}},
		"cpu cfs quota period":        {"cpuCFSQuotaPeriod: 2s", []string{`cpuCFSQuotaPeriod: Invalid value: "2s": must be between 1ms and 1s`}},
		"lease duration":              {"nodeLeaseDurationSeconds: -40", []string{`nodeLeaseDurationSeconds: Invalid value: -40`}},
		"shutdown grace":              {"shutdownGracePeriod: 0s\nshutdownGracePeriodCriticalPods: 20s", []string{`shutdownGracePeriodCriticalPods: Invalid value: "20s": must not exceed shutdownGracePeriod`}},
		"port out of range":           {"port: 70000", []string{`port: Invalid value: 70000`}},
		"healthz port collides":       {"port: 10250\nhealthzPort: 10250", []string{`healthzPort: Invalid value: 10250: must differ from port`}},
		"port wrong type":             {"port: http", []string{`port: Invalid value: "http": wrong type or format`}},
		"address":                     {"address: not-an-ip", []string{`address: Invalid value: "not-an-ip": must be an IP address`}},
		"healthz bind address":        {"healthzBindAddress: localhost", []string{`healthzBindAddress: Invalid value: "localhost"`}},
		"tls min version":             {"tlsMinVersion: TLS9", []string{`tlsMinVersion: Invalid value: "TLS9": unknown tls version "TLS9"`}},
		"tls cipher suite":            {"tlsCipherSuites: [NOPE]", []string{`tlsCipherSuites: Invalid value: ["NOPE"]: Cipher suite NOPE not supported`}},
		"tls key without cert":        {"tlsPrivateKeyFile: /k", []string{`tlsCertFile: Invalid value: "": tlsCertFile and tlsPrivateKeyFile are set together`}},
		"authorization mode":          {"authorization: {mode: RBAC}", []string{`authorization.mode: Unsupported value: "RBAC"`}},
		"cgroup driver":               {"cgroupDriver: openrc", []string{`cgroupDriver: Unsupported value: "openrc"`}},
		"cgroup root relative":        {"cgroupRoot: kubelet", []string{`cgroupRoot: Invalid value: "kubelet": must be an absolute cgroup path`}},
		"cgroup root unclean":         {"cgroupRoot: /a/../b", []string{`cgroupRoot: Invalid value: "/a/../b": must be a clean path`}},
		"enforce node allocatable": {"cgroupsPerQOS: false", []string{`enforceNodeAllocatable: Invalid value: "pods": "pods" needs cgroupsPerQOS: true`,
			`cgroupsPerQOS: Invalid value: false: kernelet does not support cgroupsPerQOS`}},
		"enforce system-reserved": {"enforceNodeAllocatable: [pods, system-reserved]", []string{`systemReservedCgroup: Required value`,
			`enforceNodeAllocatable[1]: Invalid value: "system-reserved": kernelet does not enforce reservations`}},
		"enforce unknown":          {"enforceNodeAllocatable: [everything]", []string{`enforceNodeAllocatable[0]: Unsupported value: "everything"`}},
		"system reserved quantity": {"systemReserved: {memory: -1Gi}", []string{`systemReserved[memory]: Invalid value: "-1Gi": must not be negative`}},
		"kube reserved resource":   {"kubeReserved: {gpu: \"1\"}", []string{`kubeReserved[gpu]: Unsupported value: "gpu"`}},
		"runtime endpoint":         {"containerRuntimeEndpoint: /run/containerd/containerd.sock", []string{`containerRuntimeEndpoint: Invalid value: "/run/containerd/containerd.sock": must be a unix:// URL`}},
		"image endpoint": {"imageServiceEndpoint: tcp://1.2.3.4:5", []string{`imageServiceEndpoint: Invalid value: "tcp://1.2.3.4:5": must be a unix:// URL`,
			`imageServiceEndpoint: Invalid value: "tcp://1.2.3.4:5": kernelet pulls images through containerRuntimeEndpoint`}},
		"static pod path":              {"staticPodPath: manifests", []string{`staticPodPath: Invalid value: "manifests": must be an absolute path`}},
		"static pod url":               {"staticPodURL: ftp://x/pods", []string{`staticPodURL: Invalid value: "ftp://x/pods"`}},
		"max pods":                     {"maxPods: -1", []string{`maxPods: Invalid value: -1`}},
		"pod pids limit":               {"podPidsLimit: -2", []string{`podPidsLimit: Invalid value: -2`}},
		"userns ids per pod small":     {"userNamespaces: {idsPerPod: 1000}", []string{`userNamespaces.idsPerPod: Invalid value: 1000: must not be less than 65536`}},
		"userns ids per pod unaligned": {"userNamespaces: {idsPerPod: 70000}", []string{`userNamespaces.idsPerPod: Invalid value: 70000: must be a multiple of 65536`}},
		"userns ids per pod huge":      {"userNamespaces: {idsPerPod: 4295032832}", []string{`userNamespaces.idsPerPod: Invalid value: 4295032832: must not be more than 4294967295`}},
		"oom score adj":                {"oomScoreAdj: -1001", []string{`oomScoreAdj: Invalid value: -1001`}},
		"memory throttling factor":     {"memoryThrottlingFactor: 1.5", []string{`memoryThrottlingFactor: Invalid value: 1.5: must be greater than 0 and less than or equal to 1.0`}},
		"memory throttling factor 0":   {"memoryThrottlingFactor: 0", []string{`memoryThrottlingFactor: Invalid value: 0: must be greater than 0 and less than or equal to 1.0`}},
		"reservation policy":           {"memoryReservationPolicy: Strict", []string{`memoryReservationPolicy: Unsupported value: "Strict": supported values: "None", "TieredReservation"`}},
		"certificate rotation":         {"rotateCertificates: true\nserverTLSBootstrap: true", []string{`rotateCertificates: Invalid value: true: kernelet does not rotate its client certificate yet (issue 25)`, `serverTLSBootstrap: Invalid value: true: kernelet does not request a serving certificate yet (issue 25)`}},
		"manager options":              {"cpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\nreservedSystemCPUs: \"0-x\"\nqosReserved: {memory: 50%}", []string{`cpuManagerPolicyOptions: Invalid value: 1: only with cpuManagerPolicy static`, `reservedSystemCPUs: Invalid value: "0-x": unable to parse reservedSystemCPUs (--reserved-cpus)`, `qosReserved: Invalid value: 1: kernelet does not reserve QoS cgroup memory (QOSReserved): must be empty`}},
		"yaml logs":                    {"logging: {format: yaml, options: {text: {splitStream: true}}}", []string{`logging.format: Unsupported value: "yaml": supported values: "json", "text"`, `logging.options: Invalid value: "splitStream": kernelet writes one log stream`}},
		"json logs with vmodule":       {"logging: {format: json, vmodule: [{filePattern: agent, verbosity: 4}]}", []string{`logging.vmodule: Invalid value: "agent=4": only works with the text format`}},
		"flexvolume dir":               {"volumePluginDir: /opt/flex", []string{`volumePluginDir: Invalid value: "/opt/flex": kernelet runs no FlexVolume drivers`}},
		"tracing":                      {"tracing: {samplingRatePerMillion: 1}", []string{`tracing: Invalid value: "set": kernelet exports no OpenTelemetry traces`}},
		"image gc order":               {"imageGCHighThresholdPercent: 70\nimageGCLowThresholdPercent: 80", []string{`imageGCLowThresholdPercent: Invalid value: 80: must be less than imageGCHighThresholdPercent (70)`}},
		"image gc range":               {"imageGCHighThresholdPercent: 101", []string{`imageGCHighThresholdPercent: Invalid value: 101`}},
		"container log size":           {"containerLogMaxSize: big", []string{`containerLogMaxSize: Invalid value: "big"`}},
		"container log files":          {"containerLogMaxFiles: 1", []string{`containerLogMaxFiles: Invalid value: 1: must be at least 2`}},
		"parallel pulls serialized":    {"maxParallelImagePulls: 3", []string{`maxParallelImagePulls: Invalid value: 3: cannot be larger than 1 unless serializeImagePulls is false`}},
		"parallel pulls zero":          {"serializeImagePulls: false\nmaxParallelImagePulls: 0", []string{`maxParallelImagePulls: Invalid value: 0: must be a positive number`}},
		"api qps":                      {"kubeAPIQPS: -5", []string{`kubeAPIQPS: Invalid value: -5: must not be negative`}},
		"several type errors together": {"maxPods: many\nport: http", []string{`maxPods: Invalid value: "many"`, `port: Invalid value: "http"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("cfg.yaml", []byte(header+tc.yaml+"\n"))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("want a validation error, got %v", err)
			}
			if len(ce.Errs) != len(tc.want) {
				t.Errorf("want %d error(s), got %d:\n%v", len(tc.want), len(ce.Errs), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), "cfg.yaml: "+w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseRejectsWrongKindAndEmpty(t *testing.T) {
	for name, doc := range map[string]string{
		"empty":       "",
		"wrong kind":  "apiVersion: v1\nkind: Pod\n",
		"not mapping": "- a\n- b\n",
		"bad yaml":    "a: [\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("x.yaml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "x.yaml") {
				t.Fatalf("want an error naming the file, got %v", err)
			}
		})
	}
}

func TestMergeDefaultEvictionSettings(t *testing.T) {
	cfg, err := Parse("m.yaml", []byte(header+"mergeDefaultEvictionSettings: true\nevictionHard: {memory.available: 500Mi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Kubelet.EvictionHard) != 5 || cfg.Kubelet.EvictionHard["memory.available"] != "500Mi" {
		t.Errorf("merged evictionHard = %v", cfg.Kubelet.EvictionHard)
	}
	cfg, err = Parse("n.yaml", []byte(header+"evictionHard: {memory.available: 500Mi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Kubelet.EvictionHard) != 1 {
		t.Errorf("without merge, setting a key must drop the defaults: %v", cfg.Kubelet.EvictionHard)
	}
}

func TestDefaultIsValid(t *testing.T) {
	cfg := Default()
	if cfg.Kubelet.Port != 10250 || *cfg.Kubelet.OOMScoreAdj != -999 || cfg.Kubelet.MaxPods != 110 {
		t.Errorf("defaults: %+v", cfg.Kubelet)
	}
}

func TestCheckHost(t *testing.T) {
	cfg, err := Load("testdata/kubelet-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	errs := CheckHost(cfg, Host{PID1: "init", FileExists: func(string) bool { return false }})
	got := errs.ToAggregate().Error()
	for _, want := range []string{
		`cgroupDriver: Invalid value: "systemd": needs systemd as PID 1, but PID 1 is "init"`,
		`authentication.x509.clientCAFile: Invalid value: "/etc/kubernetes/pki/ca.pem": file does not exist`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	if !cfg.CgroupDriverSet {
		t.Error("cgroupDriver is set in the file: CgroupDriverSet false")
	}
	if errs := CheckHost(cfg, Host{PID1: "systemd", FileExists: func(string) bool { return true }}); len(errs) != 0 {
		t.Errorf("the systemd driver on a systemd host: %v", errs)
	}
	cfg.Kubelet.CgroupDriver = "cgroupfs"
	if errs := CheckHost(cfg, Host{PID1: "systemd", FileExists: func(string) bool { return true }}); len(errs) != 0 {
		t.Errorf("a host that fits must pass: %v", errs)
	}
}

// A value of the wrong type must not hide the other errors nor the warnings
// (issue 15: only the syncFrequency type error used to be reported).
func TestTypeErrorDoesNotHideTheRest(t *testing.T) {
	cfg, err := Load("testdata/type-error-and-others.yaml")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *Error, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`syncFrequency: Invalid value: "5 minutes": wrong type or format`,
		`evictionSoft[memory.available]: Invalid value: "bogus"`,
		`healthzPort: Invalid value: 70000`,
		`maxPods: Invalid value: -3`,
		`imageGCLowThresholdPercent: Invalid value: 80`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	if len(ce.Errs) != 5 {
		t.Errorf("want exactly 5 errors, got %d:\n%s", len(ce.Errs), msg)
	}
	if cfg == nil || len(cfg.Warnings) != 1 || cfg.Warnings[0].Field != "evictonHard" || cfg.Warnings[0].Line != 3 {
		t.Errorf("want the unknown-field warning for evictonHard at line 3, got %+v", cfg)
	}
}

func TestParallelImagePulls(t *testing.T) {
	f, tr := false, true
	n := func(v int32) *int32 { return &v }
	cases := map[string]struct {
		serialize *bool
		max       *int32
		want      int
	}{
		"default serialized": {nil, nil, 1},
		"serialized":         {&tr, n(1), 1},
		"parallel unlimited": {&f, nil, 0},
		"parallel 3":         {&f, n(3), 3},
	}
	for name, tc := range cases {
		kc := kubeletv1beta1.KubeletConfiguration{SerializeImagePulls: tc.serialize, MaxParallelImagePulls: tc.max}
		if got := ParallelImagePulls(&kc); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}

// With the systemd driver cgroupRoot becomes part of the slice names:
// components with "_" or "." cannot be mapped back (kubelet's rule).
func TestSystemdCgroupRoot(t *testing.T) {
	for root, ok := range map[string]bool{"/": true, "/node-a": true, "/a_b": false, "/kube.slice": false} {
		cfg, err := FromDefaults(func(kc *kubeletv1beta1.KubeletConfiguration) {
			kc.CgroupDriver, kc.CgroupRoot = "systemd", root
		})
		if (err == nil) != ok {
			t.Errorf("cgroupRoot %q with systemd: %v, want ok=%v", root, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "cgroupRoot: Invalid value") {
			t.Errorf("cgroupRoot %q: %v, want the field named", root, err)
		}
		if err == nil && !cfg.CgroupDriverSet {
			t.Errorf("cgroupDriver set by an override: CgroupDriverSet false")
		}
	}
	if cfg := Default(); cfg.CgroupDriverSet || cfg.Kubelet.CgroupDriver != "cgroupfs" {
		t.Errorf("defaults: driver %q, set %v", cfg.Kubelet.CgroupDriver, cfg.CgroupDriverSet)
	}
}
