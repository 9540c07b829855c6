package kubeletflags

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// newSet is a flag set like the command's: the acted-on flags defined
// (as plain strings here), the rest bound.
func newSet(t *testing.T) (*pflag.FlagSet, *Bound) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(io.Discard)
	for name, d := range Decisions {
		if d.Acted {
			fs.String(name, "", "")
		}
	}
	b, err := Bind(fs)
	if err != nil {
		t.Fatal(err)
	}
	return fs, b
}

func TestEveryFlagDecided(t *testing.T) {
	names := map[string]Flag{}
	for _, f := range Kubelet {
		names[f.Name] = f
		if _, ok := Decisions[f.Name]; f.Field == "" && !ok {
			t.Errorf("--%s: kubelet %s flag without a kernelet decision (kernelet.go)", f.Name, KubeletVersion)
		}
	}
	for name := range Decisions {
		if f, ok := names[name]; !ok || f.Field != "" {
			t.Errorf("Decisions[%q]: not a kubelet flag outside the configuration", name)
		}
	}
	if len(Kubelet) != 131 {
		t.Errorf("kubelet %s has 131 flags (kubelet --help), the table %d", KubeletVersion, len(Kubelet))
	}
}

func TestBindEveryFlag(t *testing.T) {
	fs, _ := newSet(t)
	for _, f := range Kubelet {
		fl := fs.Lookup(f.Name)
		if fl == nil {
			t.Errorf("--%s not defined", f.Name)
			continue
		}
		if d := Decisions[f.Name]; !d.Acted && fl.Shorthand != f.Shorthand {
			t.Errorf("--%s: shorthand %q, kubelet's %q", f.Name, fl.Shorthand, f.Shorthand)
		}
		if fl.Deprecated != f.Deprecated {
			t.Errorf("--%s: deprecation %q, kubelet's %q", f.Name, fl.Deprecated, f.Deprecated)
		}
	}
}

func TestParseForms(t *testing.T) {
	ptr := func(v int32) *int32 { return &v }
	tests := []struct {
		name string
		args []string
		want func(*kubeletv1beta1.KubeletConfiguration) any
		val  any
	}{
		{"space", []string{"--max-pods", "50"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.MaxPods }, int32(50)},
		{"equals", []string{"--max-pods=51"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.MaxPods }, int32(51)},
		{"underscore", []string{"--max_pods=52"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.MaxPods }, int32(52)},
		{"last wins", []string{"--max-pods=1", "--max-pods=2"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.MaxPods }, int32(2)},
		{"after positional", []string{"extra", "--max-pods", "53"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.MaxPods }, int32(53)},
		{"bool alone", []string{"--fail-swap-on"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return *k.FailSwapOn }, true},
		{"bool false", []string{"--fail-swap-on=false"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return *k.FailSwapOn }, false},
		{"pointer int", []string{"--healthz-port", "0"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.HealthzPort }, ptr(0)},
		{"pointer string empty", []string{"--resolv-conf="}, func(k *kubeletv1beta1.KubeletConfiguration) any { return *k.ResolverConfig }, ""},
		{"nested", []string{"--client-ca-file", "/ca.crt"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.Authentication.X509.ClientCAFile }, "/ca.crt"},
		{"typed string", []string{"--authorization-mode=AlwaysAllow"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.Authorization.Mode },
			kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
		{"duration", []string{"--sync-frequency", "30s"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.SyncFrequency.Duration }, 30 * time.Second},
		{"pointer duration", []string{"--cpu-cfs-quota-period=50ms"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.CPUCFSQuotaPeriod.Duration }, 50 * time.Millisecond},
		{"ip", []string{"--address", "::1"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.Address }, "::1"},
		{"slice appends", []string{"--cluster-dns", "10.0.0.10,10.0.0.11", "--cluster-dns=10.0.0.12"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.ClusterDNS }, []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}},
		{"langle map", []string{"--eviction-hard", "memory.available<1Gi,nodefs.available<5%"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.EvictionHard }, map[string]string{"memory.available": "1Gi", "nodefs.available": "5%"}},
		{"map", []string{"--system-reserved=cpu=100m,memory=1Gi"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.SystemReserved }, map[string]string{"cpu": "100m", "memory": "1Gi"}},
		{"feature gates", []string{"--feature-gates", "A=true,B=false"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.FeatureGates }, map[string]bool{"A": true, "B": false}},
		{"taints", []string{"--register-with-taints", "a=b:NoSchedule,c:NoExecute"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.RegisterWithTaints },
			[]v1.Taint{{Key: "a", Value: "b", Effect: v1.TaintEffectNoSchedule}, {Key: "c", Effect: v1.TaintEffectNoExecute}}},
		{"verbosity short", []string{"-v", "4"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return uint32(k.Logging.Verbosity) }, uint32(4)},
		{"verbosity long", []string{"--v=5"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return uint32(k.Logging.Verbosity) }, uint32(5)},
		{"logging format", []string{"--logging-format", "json"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.Logging.Format }, "json"},
		{"buffer size", []string{"--log-json-info-buffer-size=1Mi"},
			func(k *kubeletv1beta1.KubeletConfiguration) any {
				return k.Logging.Options.JSON.InfoBufferSize.String()
			}, "1Mi"},
		{"manifest headers", []string{"--manifest-url-header", "a:1,b:2", "--manifest-url-header=a:3"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return k.StaticPodURLHeader }, map[string][]string{"a": {"1", "3"}, "b": {"2"}}},
		{"reserved memory", []string{"--reserved-memory", "0:memory=1Gi"},
			func(k *kubeletv1beta1.KubeletConfiguration) any { return len(k.ReservedMemory) }, 1},
		{"runonce", []string{"--runonce"}, func(k *kubeletv1beta1.KubeletConfiguration) any { return k.RunOnce }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, b := newSet(t)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			var kc kubeletv1beta1.KubeletConfiguration
			kc.MaxPods = 110
			for _, o := range b.Overrides() {
				o(&kc)
			}
			if got := tc.want(&kc); !reflect.DeepEqual(got, tc.val) {
				t.Errorf("got %#v, want %#v", got, tc.val)
			}
			if r := b.Refusals(); len(r) > 0 {
				t.Errorf("refusals: %v", r)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--address", "not-an-ip"},
		{"--max-pods", "many"},
		{"--register-with-taints", "a=b:Sometimes"},
		{"--sync-frequency", "1 minute"},
		{"--no-such-flag"},
	} {
		fs, _ := newSet(t)
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v: parsed", args)
		}
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--cloud-provider", "external"}, []string{"kernelet does not support --cloud-provider (kernelet runs with no cloud provider"}},
		{[]string{"--cloud-provider="}, nil},
		{[]string{"--exit-on-lock-contention", "--lock-file=/run/kubelet.lock", "--housekeeping-interval=10s"}, []string{
			"kernelet does not support --exit-on-lock-contention", "kernelet does not support --housekeeping-interval", "kernelet does not support --lock-file"}},
		{[]string{"--exit-on-lock-contention=false"}, nil},
		{[]string{"--config-dir", "/etc/kubernetes/kubelet.conf.d"}, []string{"kernelet does not support --config-dir"}},
	}
	for _, tc := range tests {
		fs, b := newSet(t)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got := b.Refusals()
		if len(got) != len(tc.want) {
			t.Errorf("%v: refusals %q, want %d", tc.args, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%v: refusal %q, want %q...", tc.args, got[i], tc.want[i])
			}
		}
	}
}

func TestBindRefusesUndecidedOrUndefined(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	if _, err := Bind(fs); err == nil || !strings.Contains(err.Error(), "the command does not define it") {
		t.Errorf("acted-on flags not defined by the command: %v", err)
	}
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	for name, d := range Decisions {
		if d.Acted {
			fs.String(name, "", "")
		}
	}
	fs.String("lock-file", "", "")
	if _, err := Bind(fs); err == nil || !strings.Contains(err.Error(), "--lock-file: the command defines a flag kernelet decided not to act on") {
		t.Errorf("a refused flag defined by the command: %v", err)
	}
}
