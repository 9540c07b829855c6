package node

import (
	"strings"
	"testing"
)

func TestValidateNodeLabels(t *testing.T) {
	for name, tc := range map[string]struct {
		labels  map[string]string
		wantErr string
	}{
		"none":                    {},
		"own domain":              {labels: map[string]string{"example.com/rack": "r1", "role": "worker"}},
		"allowed kubernetes.io":   {labels: map[string]string{"node.kubernetes.io/instance-type": "m5", "topology.kubernetes.io/zone": "a"}},
		"allowed namespace":       {labels: map[string]string{"kubelet.kubernetes.io/x": "1", "foo.node.kubernetes.io/y": "2"}},
		"node-role is restricted": {labels: map[string]string{"node-role.kubernetes.io/worker": ""}, wantErr: "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]"},
		"k8s.io subdomain":        {labels: map[string]string{"x.k8s.io/a": "b"}, wantErr: "[x.k8s.io/a]"},
		"node-restriction":        {labels: map[string]string{"node-restriction.kubernetes.io/a": "b"}, wantErr: "node-restriction.kubernetes.io/a"},
		"bad key":                 {labels: map[string]string{"a b": "c"}, wantErr: `invalid --node-labels: key "a b"`},
		"bad value":               {labels: map[string]string{"a": "-x-"}, wantErr: `value "-x-" of "a"`},
	} {
		t.Run(name, func(t *testing.T) {
			err := ValidateNodeLabels(tc.labels)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("ValidateNodeLabels = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
