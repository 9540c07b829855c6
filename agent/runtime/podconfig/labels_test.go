package podconfig

import (
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func ptr[T any](v T) *T { return &v }

func labelsPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "default", UID: "0a1b2c3d-uid",
			Labels:      map[string]string{"app": "web", LabelPodName: "spoofed"},
			Annotations: map[string]string{"note": "x", "kubernetes.io/config.source": "file"},
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr(int64(45))},
	}
}

func TestSandboxLabelsAndAnnotations(t *testing.T) {
	pod := labelsPod()
	wantLabels := map[string]string{"app": "web", LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "0a1b2c3d-uid"}
	if got := SandboxLabels(pod); !maps.Equal(got, wantLabels) {
		t.Errorf("SandboxLabels = %v, want %v", got, wantLabels)
	}
	got := SandboxAnnotations(pod)
	if !maps.Equal(got, pod.Annotations) {
		t.Errorf("SandboxAnnotations = %v, want the pod's %v", got, pod.Annotations)
	}
	got["note"] = "changed"
	if pod.Annotations["note"] != "x" {
		t.Error("SandboxAnnotations shares the pod's map")
	}
	if pod.Labels[LabelPodName] != "spoofed" {
		t.Error("SandboxLabels changed the pod's labels")
	}
}

func TestContainerLabelsAndAnnotations(t *testing.T) {
	pod := labelsPod()
	pod.DeletionGracePeriodSeconds = ptr(int64(10))
	c := &v1.Container{
		Name: "app", Image: "registry.kernelet.test/testbox:v1",
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
		Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
			HTTPGet: &v1.HTTPGetAction{Path: "/quit", Port: intstr.FromInt32(8080)},
		}},
	}
	wantLabels := map[string]string{LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "0a1b2c3d-uid", LabelContainerName: "app"}
	if got := ContainerLabels(pod, c); !maps.Equal(got, wantLabels) {
		t.Errorf("ContainerLabels = %v, want %v", got, wantLabels)
	}
	got := ContainerAnnotations(pod, c, 3)
	want := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(HashContainer(c), 16),
		AnnotationRestartCount:             "3",
		AnnotationTerminationMessagePath:   "/dev/termination-log",
		AnnotationTerminationMessagePolicy: "FallbackToLogsOnError",
		AnnotationTerminationGracePeriod:   "45",
		AnnotationDeletionGracePeriod:      "10",
		AnnotationPreStopHandler:           `{"httpGet":{"path":"/quit","port":8080}}`,
		AnnotationContainerPorts:           `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`,
	}
	if !maps.Equal(got, want) {
		t.Errorf("ContainerAnnotations =\n %v\nwant\n %v", got, want)
	}

	// Round trip through the parser.
	info, err := ParseContainer(wantLabels, got)
	if err != nil {
		t.Fatalf("ParseContainer: %v", err)
	}
	wantInfo := ContainerInfo{
		PodName: "web", PodNamespace: "default", PodUID: "0a1b2c3d-uid", ContainerName: "app",
		Hash: HashContainer(c), RestartCount: 3,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		TerminationGracePeriod: ptr(int64(45)), DeletionGracePeriod: ptr(int64(10)),
		PreStop: c.Lifecycle.PreStop, Ports: c.Ports,
	}
	if !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("ParseContainer =\n %+v\nwant\n %+v", info, wantInfo)
	}
}

func TestContainerAnnotationsMinimal(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	c := &v1.Container{Name: "c", Image: "img"}
	got := ContainerAnnotations(pod, c, 0)
	for _, k := range []string{AnnotationTerminationGracePeriod, AnnotationDeletionGracePeriod, AnnotationPreStopHandler, AnnotationContainerPorts} {
		if _, ok := got[k]; ok {
			t.Errorf("annotation %s set without a value in the spec", k)
		}
	}
	if got[AnnotationRestartCount] != "0" || got[AnnotationTerminationMessagePath] != "" {
		t.Errorf("annotations = %v", got)
	}
}

func TestHashContainer(t *testing.T) {
	base := v1.Container{
		Name: "app", Image: "img:1", Command: []string{"/bin/app"}, Args: []string{"--x"},
		Env:          []v1.EnvVar{{Name: "A", Value: "1"}},
		Ports:        []v1.ContainerPort{{ContainerPort: 80}},
		VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
	h := HashContainer(&base)
	if h != HashContainer(base.DeepCopy()) {
		t.Fatal("hash is not stable for an equal container")
	}
	// What must not change the hash.
	same := map[string]func(c *v1.Container){
		"resources (resized in place)": func(c *v1.Container) {
			c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: qty("1Gi")}
		},
		"probes": func(c *v1.Container) { c.LivenessProbe = &v1.Probe{PeriodSeconds: 3} },
		"lifecycle": func(c *v1.Container) {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}}
		},
		"image pull policy":       func(c *v1.Container) { c.ImagePullPolicy = v1.PullAlways },
		"security context":        func(c *v1.Container) { c.SecurityContext = &v1.SecurityContext{RunAsUser: ptr(int64(1000))} },
		"defaulted port protocol": func(c *v1.Container) { c.Ports[0].Protocol = v1.ProtocolTCP },
		"defaulted termination message path and policy": func(c *v1.Container) {
			c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", v1.TerminationMessageReadFile
		},
		"propagation None written out": func(c *v1.Container) { c.VolumeMounts[0].MountPropagation = ptr(v1.MountPropagationNone) },
	}
	for name, mutate := range same {
		t.Run("same/"+name, func(t *testing.T) {
			c := base.DeepCopy()
			mutate(c)
			if got := HashContainer(c); got != h {
				t.Errorf("hash changed: %x → %x", h, got)
			}
		})
	}
	// What must change it.
	differ := map[string]func(c *v1.Container){
		"image":       func(c *v1.Container) { c.Image = "img:2" },
		"name":        func(c *v1.Container) { c.Name = "other" },
		"command":     func(c *v1.Container) { c.Command = []string{"/bin/other"} },
		"args":        func(c *v1.Container) { c.Args = nil },
		"working dir": func(c *v1.Container) { c.WorkingDir = "/tmp" },
		"env value":   func(c *v1.Container) { c.Env[0].Value = "2" },
		"env from field": func(c *v1.Container) {
			c.Env[0] = v1.EnvVar{Name: "A", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
		},
		"port":                     func(c *v1.Container) { c.Ports[0].ContainerPort = 81 },
		"protocol":                 func(c *v1.Container) { c.Ports[0].Protocol = v1.ProtocolUDP },
		"mount path":               func(c *v1.Container) { c.VolumeMounts[0].MountPath = "/other" },
		"read only":                func(c *v1.Container) { c.VolumeMounts[0].ReadOnly = true },
		"tty":                      func(c *v1.Container) { c.TTY = true },
		"termination message path": func(c *v1.Container) { c.TerminationMessagePath = "/tmp/msg" },
	}
	for name, mutate := range differ {
		t.Run("differ/"+name, func(t *testing.T) {
			c := base.DeepCopy()
			mutate(c)
			if got := HashContainer(c); got == h {
				t.Errorf("hash did not change (%x)", h)
			}
		})
	}
}

func TestParseSandboxLabels(t *testing.T) {
	info, err := ParseSandboxLabels(map[string]string{LabelPodName: "web", LabelPodNamespace: "ns", LabelPodUID: "u1", "app": "x"})
	if err != nil || info != (SandboxInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1"}) {
		t.Errorf("ParseSandboxLabels = %+v, %v", info, err)
	}
	info, err = ParseSandboxLabels(map[string]string{LabelPodName: "web", LabelPodNamespace: "ns"})
	if !errors.Is(err, ErrNotPodObject) || !strings.Contains(err.Error(), LabelPodUID) || info.PodName != "web" {
		t.Errorf("ParseSandboxLabels without uid = %+v, %v", info, err)
	}
}

func TestParseContainerTolerates(t *testing.T) {
	ids := map[string]string{LabelPodName: "web", LabelPodNamespace: "ns", LabelPodUID: "u1", LabelContainerName: "app"}
	cases := map[string]struct {
		labels, annotations map[string]string
		want                ContainerInfo
		errIs               []error
		errHas              string
	}{
		"nothing but identity": {ids, nil,
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app"}, nil, ""},
		"not a pod container": {map[string]string{"io.cri-containerd.kind": "container"}, map[string]string{AnnotationRestartCount: "2"},
			ContainerInfo{RestartCount: 2}, []error{ErrNotPodObject}, LabelContainerName},
		"garbled hash": {ids, map[string]string{AnnotationContainerHash: "xyz", AnnotationRestartCount: "1"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app", RestartCount: 1}, []error{ErrBadAnnotation}, AnnotationContainerHash},
		"hash out of range": {ids, map[string]string{AnnotationContainerHash: "1ffffffffffffffff"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app"}, []error{ErrBadAnnotation}, "out of range"},
		"kubelet's 32-bit hash parses": {ids, map[string]string{AnnotationContainerHash: "3f8a2c1e"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app", Hash: 0x3f8a2c1e}, nil, ""},
		"restart-all epoch": {ids, withRestartAllEpoch(map[string]string{}, 2),
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app", RestartAllEpoch: 2}, nil, ""},
		"epoch 0 is not written": {ids, withRestartAllEpoch(map[string]string{}, 0),
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app"}, nil, ""},
		"negative restart-all epoch": {ids, map[string]string{AnnotationRestartAllEpoch: "-1"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app"}, []error{ErrBadAnnotation}, AnnotationRestartAllEpoch},
		"negative restart count": {ids, map[string]string{AnnotationRestartCount: "-1"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app"}, []error{ErrBadAnnotation}, "negative"},
		"garbled restart count and json, good grace": {ids, map[string]string{
			AnnotationRestartCount: "two", AnnotationPreStopHandler: "{", AnnotationContainerPorts: "[{]",
			AnnotationTerminationGracePeriod: "30", AnnotationDeletionGracePeriod: "soon"},
			ContainerInfo{PodName: "web", PodNamespace: "ns", PodUID: "u1", ContainerName: "app", TerminationGracePeriod: ptr(int64(30))},
			[]error{ErrBadAnnotation}, AnnotationDeletionGracePeriod},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseContainer(tc.labels, tc.annotations)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("info =\n %+v\nwant\n %+v", got, tc.want)
			}
			if len(tc.errIs) == 0 {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			for _, target := range tc.errIs {
				if !errors.Is(err, target) {
					t.Errorf("err = %v, want errors.Is %v", err, target)
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("err = %v, want it to mention %q", err, tc.errHas)
			}
		})
	}
}
