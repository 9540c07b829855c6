package volume

import (
	"os"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func i32(v int32) *int32 { return &v }
func i64(v int64) *int64 { return &v }

func TestConfigMapAndSecretPayload(t *testing.T) {
	cm := &v1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"bin": {0, 1}}}
	cases := map[string]struct {
		items    []v1.KeyToPath
		optional bool
		want     map[string]os.FileMode
		wantErr  string
	}{
		"every key with the default mode": {want: map[string]os.FileMode{"a": 0o644, "b": 0o644, "bin": 0o644}},
		"items with paths and modes": {items: []v1.KeyToPath{{Key: "a", Path: "x/a"}, {Key: "bin", Path: "bin", Mode: i32(0o400)}},
			want: map[string]os.FileMode{"x/a": 0o644, "bin": 0o400}},
		"missing key":          {items: []v1.KeyToPath{{Key: "nope", Path: "n"}}, wantErr: "configmap references non-existent config key: nope"},
		"missing key optional": {items: []v1.KeyToPath{{Key: "nope", Path: "n"}, {Key: "a", Path: "a"}}, optional: true, want: map[string]os.FileMode{"a": 0o644}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ConfigMapPayload(cm, tc.items, DefaultMode, tc.optional)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("payload = %v, want %v", got, tc.want)
			}
			for p, m := range tc.want {
				if got[p].Mode != m {
					t.Errorf("%s mode = %v, want %v", p, got[p].Mode, m)
				}
			}
		})
	}
	if _, err := SecretPayload(&v1.Secret{}, []v1.KeyToPath{{Key: "k", Path: "k"}}, DefaultMode, false); err == nil || err.Error() != "references non-existent secret key: k" {
		t.Errorf("secret missing key err = %v", err)
	}
	if got, _ := ConfigMapPayload(nil, nil, DefaultMode, true); len(got) != 0 {
		t.Errorf("missing optional configMap payload = %v", got)
	}
	fg := WithFSGroup(map[string]FileProjection{"k": file(nil, 0o400)}, i64(1234))
	if fg["k"].Mode != 0o440 || fg["k"].GID != 1234 {
		t.Errorf("fsGroup file = %+v, want mode 0440 gid 1234", fg["k"])
	}
}

func TestDownwardAPIPayload(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u",
			Labels: map[string]string{"b": "2", "a": `x"y`}, Annotations: map[string]string{"k": "v"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
	}
	items := []v1.DownwardAPIVolumeFile{
		{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		{Path: "k", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['k']"}, Mode: i32(0o600)},
		{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}},
		{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}},
	}
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
	got, err := DownwardAPIPayload(pod, items, DefaultMode, alloc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"namespace": "ns", "labels": "a=\"x\\\"y\"\nb=\"2\"", "k": "v", "mem": "64", "cpu": "2"}
	for p, v := range want {
		if string(got[p].Data) != v {
			t.Errorf("%s = %q, want %q", p, got[p].Data, v)
		}
	}
	if got["k"].Mode != 0o600 || got["namespace"].Mode != 0o644 {
		t.Errorf("modes: k %v namespace %v", got["k"].Mode, got["namespace"].Mode)
	}
}

func TestEmptyDirSize(t *testing.T) {
	lim := func(q string) v1.Container {
		return v1.Container{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}}}
	}
	q := resource.MustParse("8Mi")
	cases := map[string]struct {
		containers []v1.Container
		src        v1.EmptyDirVolumeSource
		alloc      int64
		want       int64
	}{
		"sizeLimit":                   {src: v1.EmptyDirVolumeSource{SizeLimit: &q}, alloc: 1 << 30, want: 8 << 20},
		"pod limit below sizeLimit":   {containers: []v1.Container{lim("4Mi")}, src: v1.EmptyDirVolumeSource{SizeLimit: &q}, want: 4 << 20},
		"pod limit, no sizeLimit":     {containers: []v1.Container{lim("64Mi")}, alloc: 1 << 30, want: 64 << 20},
		"a container without a limit": {containers: []v1.Container{lim("64Mi"), {}}, alloc: 1 << 30, want: 1 << 30},
		"nothing known: no size":      {containers: []v1.Container{{}}},
	}
	for name, tc := range cases {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: tc.containers}}
		if got := EmptyDirSize(pod, &tc.src, tc.alloc); got != tc.want {
			t.Errorf("%s: size = %d, want %d", name, got, tc.want)
		}
	}
}
