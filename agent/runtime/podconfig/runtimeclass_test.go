package podconfig

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRuntimeHandler(t *testing.T) {
	classes := map[string]*nodev1.RuntimeClass{"fast": {ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Handler: "runc"}}
	get := func(name string) (*nodev1.RuntimeClass, error) {
		if name == "broken" {
			return nil, errors.New("connection refused")
		}
		if rc, ok := classes[name]; ok {
			return rc, nil
		}
		return nil, apierrors.NewNotFound(nodev1.Resource("runtimeclass"), name)
	}
	named := func(n string) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{RuntimeClassName: &n}} }
	tests := []struct {
		name    string
		pod     *v1.Pod
		get     RuntimeClassGetter
		want    string
		wantErr string
	}{
		{"none", &v1.Pod{}, get, "", ""},
		{"empty name", named(""), get, "", ""},
		{"found", named("fast"), get, "runc", ""},
		{"missing", named("gone"), get, "", `runtimeclass.node.k8s.io "gone" not found`},
		{"lookup fails", named("broken"), get, "", "failed to lookup RuntimeClass broken: connection refused"},
		{"standalone runc", named("runc"), nil, "runc", ""},
		{"standalone other", named("kata"), nil, "", `RuntimeClass "kata" cannot be looked up without an API server (standalone: only "runc")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RuntimeHandler(tt.pod, tt.get)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
				t.Errorf("RuntimeHandler = %q, %v; want %q, %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
