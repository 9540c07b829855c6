package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldValue(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "u-123",
			Labels:      map[string]string{"tier.example.com/role": "front", "a": `x"y`},
			Annotations: map[string]string{"owner": "ops"}},
		Spec: v1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa-web"},
	}
	env := &Addresses{HostIPs: []string{"192.0.2.10"}, PodIPs: []string{"10.244.1.5", "fd00::5"}}
	cases := map[string]struct {
		path  string
		addrs *Addresses
		want  string
		ok    bool
	}{
		"name":                      {"metadata.name", nil, "web", true},
		"namespace":                 {"metadata.namespace", nil, "team", true},
		"uid":                       {"metadata.uid", env, "u-123", true},
		"all labels":                {"metadata.labels", nil, "a=\"x\\\"y\"\ntier.example.com/role=\"front\"", true},
		"all annotations":           {"metadata.annotations", nil, `owner="ops"`, true},
		"one label":                 {"metadata.labels['tier.example.com/role']", nil, "front", true},
		"missing label is empty":    {"metadata.labels['missing']", env, "", true},
		"one annotation":            {"metadata.annotations['owner']", env, "ops", true},
		"node name":                 {"spec.nodeName", env, "node-1", true},
		"service account":           {"spec.serviceAccountName", env, "sa-web", true},
		"host IP":                   {"status.hostIP", env, "192.0.2.10", true},
		"host IPs":                  {"status.hostIPs", env, "192.0.2.10", true},
		"pod IP":                    {"status.podIP", env, "10.244.1.5", true},
		"pod IPs":                   {"status.podIPs", env, "10.244.1.5,fd00::5", true},
		"no pod IP yet":             {"status.podIP", &Addresses{}, "", true},
		"volumes: no node name":     {"spec.nodeName", nil, "", false},
		"volumes: no pod IP":        {"status.podIP", nil, "", false},
		"unknown path":              {"spec.hostname", env, "", false},
		"unclosed subscript":        {"metadata.labels['a", env, "", false},
		"subscript of another path": {"metadata.name['a']", env, "", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := FieldValue(pod, tc.path, tc.addrs)
			if got != tc.want || ok != tc.ok {
				t.Errorf("FieldValue(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestFormatMap(t *testing.T) {
	cases := map[string]struct {
		in   map[string]string
		want string
	}{
		"nil":                      {nil, ""},
		"sorted, no final newline": {map[string]string{"b": "2", "a": "1"}, "a=\"1\"\nb=\"2\""},
		"quoted":                   {map[string]string{"k": "line\none \"q\""}, `k="line\none \"q\""`},
	}
	for name, tc := range cases {
		if got := FormatMap(tc.in); got != tc.want {
			t.Errorf("%s: FormatMap = %q, want %q", name, got, tc.want)
		}
	}
}
