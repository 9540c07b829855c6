package podconfig

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": "", "REF": "$(A)", "": "nameless"}
	lookup := func(n string) (string, bool) {
		if n == "" { // an empty name is never a variable reference
			return "", false
		}
		v, ok := vars[n]
		return v, ok
	}
	cases := map[string]struct{ in, want string }{
		"no operator":                      {"plain text", "plain text"},
		"whole":                            {"$(A)", "alpha"},
		"twice":                            {"$(A)-$(A)", "alpha-alpha"},
		"embedded":                         {"x$(B)y", "xbetay"},
		"adjacent":                         {"$(A)$(B)", "alphabeta"},
		"empty value":                      {"[$(EMPTY)]", "[]"},
		"undefined is kept":                {"$(NOPE)", "$(NOPE)"},
		"escaped reference":                {"$$(A)", "$(A)"},
		"escaped then expanded":            {"$$(A)_$(B)", "$(A)_beta"},
		"double dollar alone":              {"cost: $$5", "cost: $5"},
		"three dollars then reference":     {"$$$(A)", "$alpha"},
		"four dollars then reference":      {"$$$$(A)", "$$(A)"},
		"bare operator kept":               {"$A and $?", "$A and $?"},
		"shell braces kept":                {"${A}", "${A}"},
		"trailing operator":                {"end$", "end$"},
		"unterminated":                     {"$(A", "$(A"},
		"unterminated after a reference":   {"$(A)_$(", "alpha_$("},
		"many openers":                     {"--$($($(--", "--$($($(--"},
		"nested reference is not expanded": {"$(A$(B))", "$(A$(B))"},
		"value not expanded again":         {"$(REF)", "$(A)"},
		"empty name":                       {"$()", "$()"},
		"escapes inside a name":            {"$(x$$y)", "$(x$$y)"},
		"operator before multibyte":        {"$€ and $中", "$€ and $中"},
		"backslash is no escape":           {`\$(A)`, `\alpha`},
		"newline":                          {"a\n$(B)\n", "a\nbeta\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Expand(tc.in, lookup); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func envPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "team", UID: "u-123",
			Labels:      map[string]string{"app": "web", "tier.example.com/role": "front"},
			Annotations: map[string]string{"owner": "ops"},
		},
		Spec: v1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa-web"},
	}
}

func envOf(kv []*runtimeapi.KeyValue) string {
	var b strings.Builder
	for _, e := range kv {
		b.WriteString(e.Key + "=" + string(e.Value) + ";")
	}
	return b.String()
}

func TestContainerEnv(t *testing.T) {
	field := func(name, path string) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	res := func(name, r, divisor string) v1.EnvVar {
		sel := &v1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			sel.Divisor = qty(divisor)
		}
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
	}
	opts := ContainerOptions{
		PodIPs: []string{"10.244.1.5", "fd00::5"}, HostIPs: []string{"192.0.2.10"},
		NodeAllocatable: v1.ResourceList{v1.ResourceCPU: qty("2"), v1.ResourceMemory: qty("4Gi"), v1.ResourceEphemeralStorage: qty("10Gi")},
	}
	resources := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: qty("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: qty("1500m"), v1.ResourceMemory: qty("64Mi"), "hugepages-2Mi": qty("4Mi")},
	}
	cases := map[string]struct {
		env     []v1.EnvVar
		podRes  *v1.ResourceRequirements
		want    string
		wantErr string
	}{
		"values in order": {env: []v1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}, want: "B=2;A=1;"},
		"expansion from earlier variables only": {
			env:  []v1.EnvVar{{Name: "HOST", Value: "db"}, {Name: "URL", Value: "pg://$(HOST):$(PORT)"}, {Name: "PORT", Value: "5432"}},
			want: "HOST=db;URL=pg://db:$(PORT);PORT=5432;"},
		"escape": {env: []v1.EnvVar{{Name: "A", Value: "x"}, {Name: "LIT", Value: "$$(A)"}}, want: "A=x;LIT=$(A);"},
		"redefinition replaces in place": {
			env:  []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "$(A)"}, {Name: "A", Value: "$(A)0"}},
			want: "A=10;B=1;"},
		"pod fields": {env: []v1.EnvVar{
			field("N", "metadata.name"), field("NS", "metadata.namespace"), field("UID", "metadata.uid"),
			field("NODE", "spec.nodeName"), field("SA", "spec.serviceAccountName"),
			field("L", "metadata.labels['tier.example.com/role']"), field("LM", "metadata.labels['missing']"),
			field("AN", "metadata.annotations['owner']"),
		}, want: "N=web;NS=team;UID=u-123;NODE=node-1;SA=sa-web;L=front;LM=;AN=ops;"},
		"ips": {env: []v1.EnvVar{field("IP", "status.podIP"), field("IPS", "status.podIPs"), field("HIP", "status.hostIP"), field("HIPS", "status.hostIPs")},
			want: "IP=10.244.1.5;IPS=10.244.1.5,fd00::5;HIP=192.0.2.10;HIPS=192.0.2.10;"},
		"field values are not expanded": {env: []v1.EnvVar{{Name: "A", Value: "x"}, field("ANN", "metadata.annotations['owner']")}, want: "A=x;ANN=ops;"},
		"resources rounded up": {env: []v1.EnvVar{
			res("CPU_REQ", "requests.cpu", ""),     // 250m / 1 → 1
			res("CPU_REQ_M", "requests.cpu", "1m"), // 250
			res("CPU_LIM", "limits.cpu", ""),       // 1.5 → 2
			res("MEM_LIM_MI", "limits.memory", "1Mi"),
			res("MEM_REQ", "requests.memory", ""),             // defaults to the limit
			res("EPH_LIM", "limits.ephemeral-storage", "1Gi"), // node allocatable
			res("EPH_REQ", "requests.ephemeral-storage", ""),  // none: 0
		}, want: "CPU_REQ=1;CPU_REQ_M=250;CPU_LIM=2;MEM_LIM_MI=64;MEM_REQ=67108864;EPH_LIM=10;EPH_REQ=0;"},
		"pod level limit before node allocatable": {
			env:    []v1.EnvVar{res("EPH", "limits.ephemeral-storage", "1Gi"), res("MEM", "limits.memory", "1Mi")},
			podRes: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: qty("3Gi")}},
			want:   "EPH=3;MEM=64;"},
		"configMap reference without an API server": {env: []v1.EnvVar{{Name: "CFG", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}}},
			wantErr: `env "CFG": configmap "": unsupported pod fields: no API server`},
		"unknown field path": {env: []v1.EnvVar{field("X", "spec.hostname")}, wantErr: `env "X": unsupported pod fields: fieldRef "spec.hostname"`},
		// Huge pages: the request defaults to the limit; a size without a
		// limit is 0 (no node allocatable stands in, as kubelet).
		"huge pages": {env: []v1.EnvVar{res("HP", "limits.hugepages-2Mi", "1Mi"), res("HPR", "requests.hugepages-2Mi", ""), res("HG", "limits.hugepages-1Gi", "")},
			want: "HP=4;HPR=4194304;HG=0;"},
		"not a huge page size": {env: []v1.EnvVar{res("HP", "limits.hugepages-x", "")}, wantErr: `resourceFieldRef "limits.hugepages-x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := envPod()
			pod.Spec.Resources = tc.podRes
			c := &v1.Container{Name: "app", Env: tc.env, Resources: resources}
			got, err := ContainerEnv(pod, c, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrUnsupported) {
					t.Fatalf("err = %v, want %q (ErrUnsupported)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := envOf(got); s != tc.want {
				t.Errorf("env = %s\nwant  %s", s, tc.want)
			}
		})
	}
}

func TestContainerEnvFromObjects(t *testing.T) {
	yes := true
	cms := map[string]*v1.ConfigMap{
		"cfg": {Data: map[string]string{"B": "b", "A": "a", "bad=key": "x"}},
		"bin": {Data: map[string]string{"T": "text"}, BinaryData: map[string][]byte{"RAW": []byte("bytes")}},
	}
	secs := map[string]*v1.Secret{"sec": {Data: map[string][]byte{"PW": []byte("s3cret")}}}
	opts := ContainerOptions{
		ConfigMap: func(n string) (*v1.ConfigMap, error) {
			if cm, ok := cms[n]; ok {
				return cm, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, n)
		},
		Secret: func(n string) (*v1.Secret, error) {
			if s, ok := secs[n]; ok {
				return s, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, n)
		},
	}
	var warnings []string
	opts.Warn = func(reason, msg string) { warnings = append(warnings, reason+": "+msg) }
	cmRef := func(name, key string, opt *bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: opt}}
	}
	c := &v1.Container{Name: "app",
		EnvFrom: []v1.EnvFromSource{
			{Prefix: "P_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: &yes}},
		},
		Env: []v1.EnvVar{
			{Name: "X", Value: "$(P_A)-$(P_B)"},
			{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "PW"}}},
			{Name: "OPT", ValueFrom: cmRef("cfg", "missing", &yes)},
			{Name: "P_A", ValueFrom: cmRef("cfg", "B", nil)},
		}}
	got, err := ContainerEnv(envPod(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := envOf(got), "P_A=b;P_B=b;X=a-b;PW=s3cret;"; s != want {
		t.Errorf("env = %s, want %s", s, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "InvalidEnvironmentVariableNames: Keys [P_bad=key] from the EnvFrom configMap") {
		t.Errorf("warnings = %q", warnings)
	}
	bin := &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "bin"}}}},
		Env: []v1.EnvVar{{Name: "R", ValueFrom: cmRef("bin", "RAW", nil)}}}
	if got, err := ContainerEnv(envPod(), bin, opts); err != nil || envOf(got) != "RAW=bytes;T=text;R=bytes;" {
		t.Errorf("binaryData env = %s, %v; want RAW=bytes;T=text;R=bytes;", envOf(got), err)
	}
	for _, tc := range []struct {
		env  v1.EnvVar
		want string
	}{
		{v1.EnvVar{Name: "M", ValueFrom: cmRef("ghost", "k", nil)}, `env "M": configmap "ghost" not found`},
		{v1.EnvVar{Name: "K", ValueFrom: cmRef("cfg", "k", nil)}, `env "K": couldn't find key k in ConfigMap team/cfg`},
	} {
		_, err := ContainerEnv(envPod(), &v1.Container{Name: "app", Env: []v1.EnvVar{tc.env}}, opts)
		if err == nil || err.Error() != tc.want {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}
