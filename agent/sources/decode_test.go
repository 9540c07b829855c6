package sources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/internal/podutil"
)

const node = "Node-1"

var seenAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// load decodes and defaults a fixture the way the directory source does.
func load(t *testing.T, name string) ([]docPod, []docError) {
	t.Helper()
	path := filepath.Join("testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pods, errs, _ := staticPods(data, SourceFile, "/etc/kubernetes/manifests/"+name, node, seenAt)
	return pods, errs
}

func TestDecodeFixtures(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		want []string // full names, in document order
		qos  []v1.PodQOSClass
		docs []int    // document of each pod
		errs []string // "doc:substring"
	}{
		"besteffort":  {file: "besteffort.yaml", want: []string{"besteffort-node-1_default"}, qos: []v1.PodQOSClass{v1.PodQOSBestEffort}, docs: []int{1}},
		"burstable":   {file: "burstable.yaml", want: []string{"burstable-node-1_kube-system"}, qos: []v1.PodQOSClass{v1.PodQOSBurstable}, docs: []int{1}},
		"guaranteed":  {file: "guaranteed.yaml", want: []string{"guaranteed-node-1_kube-system"}, qos: []v1.PodQOSClass{v1.PodQOSGuaranteed}, docs: []int{1}},
		"multi-doc":   {file: "multi.yaml", want: []string{"first-node-1_default", "second-node-1_default"}, docs: []int{2, 4}},
		"json":        {file: "json-pod.json", want: []string{"json-node-1_web"}, docs: []int{1}},
		"pod list":    {file: "podlist.yaml", want: []string{"one-node-1_default", "two-node-1_default"}, docs: []int{1, 1}},
		"malformed":   {file: "malformed.yaml", errs: []string{"1:invalid manifest: yaml: line 4: did not find expected key"}},
		"wrong kind":  {file: "wrong-kind.yaml", errs: []string{`1:invalid manifest: unsupported Deployment "apps/v1": want a v1 Pod or PodList`}},
		"invalid pod": {file: "invalid.yaml", errs: []string{`1:metadata.name: Invalid value: "Invalid_Name"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pods, errs := load(t, tc.file)
			var got []string
			for i, dp := range pods {
				got = append(got, FullName(dp.pod))
				if i < len(tc.docs) && dp.doc != tc.docs[i] {
					t.Errorf("pod %d: doc %d, want %d", i, dp.doc, tc.docs[i])
				}
				if i < len(tc.qos) {
					if q := qosClass(dp.pod); q != tc.qos[i] {
						t.Errorf("pod %d: QoS %s, want %s", i, q, tc.qos[i])
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("pods %v, want %v", got, tc.want)
			}
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %d", errs, len(tc.errs))
			}
			for i, e := range errs {
				doc, sub, _ := strings.Cut(tc.errs[i], ":")
				if got := e.err.Error(); !strings.Contains(got, sub) || doc != string(rune('0'+e.doc)) {
					t.Errorf("error %d: doc %d %q, want doc %s containing %q", i, e.doc, got, doc, sub)
				}
				if !errors.Is(e.err, ErrInvalidManifest) {
					t.Errorf("error %d does not wrap ErrInvalidManifest: %v", i, e.err)
				}
			}
		})
	}
}

// qosClass is the pod's QoS class from its resources, enough for the
// fixtures (every container sets both or none).
func qosClass(p *v1.Pod) v1.PodQOSClass {
	requests, limits, guaranteed := false, false, true
	for _, c := range append(append([]v1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		requests = requests || len(c.Resources.Requests) > 0
		limits = limits || len(c.Resources.Limits) > 0
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			l, ok := c.Resources.Limits[r]
			if !ok {
				guaranteed = false
				continue
			}
			if q, ok := c.Resources.Requests[r]; ok && q.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !requests && !limits:
		return v1.PodQOSBestEffort
	case guaranteed:
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func TestDecodeDocuments(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in       string
		pods     int
		errs     []string
		warnings int
	}{
		"empty":               {in: ""},
		"only comments":       {in: "# nothing\n---\n# here\n"},
		"explicit null":       {in: "null\n"},
		"scalar":              {in: "hello\n", errs: []string{"not an object"}},
		"list":                {in: "- a\n- b\n", errs: []string{"not an object"}},
		"missing kind":        {in: "apiVersion: v1\nmetadata: {name: x}\n", errs: []string{"kind is missing"}},
		"missing apiVersion":  {in: "kind: Pod\nmetadata: {name: x}\n", errs: []string{`unsupported Pod ""`}},
		"pod v2":              {in: "apiVersion: v2\nkind: Pod\n", errs: []string{`unsupported Pod "v2"`}},
		"bad separator":       {in: "apiVersion: v1\nkind: Pod\n--- x\n", errs: []string{"invalid Yaml document separator"}},
		"type error":          {in: "apiVersion: v1\nkind: Pod\nspec: {containers: 3}\n", errs: []string{"cannot unmarshal"}},
		"unknown field":       {in: "apiVersion: v1\nkind: Pod\nspec: {containerz: []}\n", pods: 1, warnings: 1},
		"case sensitive":      {in: "apiVersion: v1\nkind: Pod\nSpec: {}\n", pods: 1, warnings: 1},
		"empty pod list":      {in: "apiVersion: v1\nkind: PodList\nitems: []\n"},
		"list item wrong":     {in: "apiVersion: v1\nkind: PodList\nitems: [{kind: Service}]\n", errs: []string{`items[0]: unsupported Service`}},
		"bad doc among good":  {in: "apiVersion: v1\nkind: Pod\n---\nkind: Service\napiVersion: v1\n---\napiVersion: v1\nkind: Pod\n", pods: 2, errs: []string{"unsupported Service"}},
		"json pod list":       {in: `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"}}]}`, pods: 1},
		"duplicate yaml keys": {in: "apiVersion: v1\nkind: Pod\nkind: Pod\n", pods: 1, warnings: 1},
		// resource.ParseQuantity alone spends minutes on these.
		"quantity exponent": {
			in:   "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, resources: {limits: {memory: '1e-2000000000'}}}]}\n---\napiVersion: v1\nkind: Pod\n",
			pods: 1, errs: []string{`spec.containers[0].resources.limits[memory]: quantity "1e-2000000000": exponent -2000000000 out of range [-64, 64]`},
		},
		"sizeLimit exponent": {
			in:   "apiVersion: v1\nkind: PodList\nitems: [{spec: {volumes: [{name: v, emptyDir: {sizeLimit: 9E99999999}}]}}]\n",
			errs: []string{`items[0].spec.volumes[0].emptyDir.sizeLimit: quantity "9E99999999"`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ms := Decode([]byte(tc.in))
			pods, warnings := 0, 0
			var errs []string
			for _, m := range ms {
				warnings += len(m.Warnings)
				if m.Err != nil {
					errs = append(errs, m.Err.Error())
					if m.Pod != nil {
						t.Errorf("manifest with both pod and error: %+v", m)
					}
					continue
				}
				if m.Pod == nil || m.Pod.Kind != "Pod" || m.Pod.APIVersion != "v1" {
					t.Errorf("manifest without a v1 Pod: %+v", m)
				}
				pods++
			}
			if pods != tc.pods || warnings != tc.warnings {
				t.Errorf("pods=%d warnings=%d, want %d and %d (%+v)", pods, warnings, tc.pods, tc.warnings, ms)
			}
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %q, want %q", errs, tc.errs)
			}
			for i := range errs {
				if !strings.Contains(errs[i], tc.errs[i]) {
					t.Errorf("error %q does not contain %q", errs[i], tc.errs[i])
				}
			}
		})
	}
}

func TestStaticPodDefaults(t *testing.T) {
	t.Parallel()
	pods, errs := load(t, "burstable.yaml")
	if len(errs) != 0 || len(pods) != 1 {
		t.Fatalf("pods %v errors %v", pods, errs)
	}
	p := pods[0].pod
	uid, err := StaticPodUID(SourceFile, "/etc/kubernetes/manifests/burstable.yaml", node, decodeOne(t, "burstable.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	grace := int64(30)
	checks := map[string]struct{ got, want any }{
		"name":             {p.Name, "burstable-node-1"},
		"namespace":        {p.Namespace, "kube-system"},
		"uid":              {p.UID, uid},
		"uid length":       {len(p.UID), 32},
		"config.source":    {p.Annotations[podutil.AnnotationConfigSource], SourceFile},
		"config.hash":      {p.Annotations[podutil.AnnotationConfigHash], string(uid)},
		"config.seen":      {p.Annotations[podutil.AnnotationConfigSeen], "2026-05-01T12:00:00Z"},
		"nodeName":         {p.Spec.NodeName, node},
		"phase":            {p.Status.Phase, v1.PodPending},
		"restartPolicy":    {p.Spec.RestartPolicy, v1.RestartPolicyOnFailure},
		"dnsPolicy":        {p.Spec.DNSPolicy, v1.DNSClusterFirst},
		"grace":            {*p.Spec.TerminationGracePeriodSeconds, grace},
		"schedulerName":    {p.Spec.SchedulerName, v1.DefaultSchedulerName},
		"pull (latest)":    {p.Spec.Containers[0].ImagePullPolicy, v1.PullAlways},
		"port protocol":    {p.Spec.Containers[0].Ports[0].Protocol, v1.ProtocolTCP},
		"termination path": {p.Spec.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		"toleration":       {p.Spec.Tolerations, []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}},
		"request kept":     {p.Spec.Containers[0].Resources.Requests.Memory().Cmp(resource.MustParse("64Mi")), 0},
	}
	for name, c := range checks {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	// The URL source adds no toleration.
	hp, err := StaticPod(decodeOne(t, "burstable.yaml"), SourceHTTP, "http://h/pods", node, seenAt)
	if err != nil {
		t.Fatal(err)
	}
	if len(hp.Spec.Tolerations) != 0 || hp.Annotations[podutil.AnnotationConfigSource] != SourceHTTP {
		t.Errorf("http pod: tolerations %v source %q", hp.Spec.Tolerations, hp.Annotations[podutil.AnnotationConfigSource])
	}
}

func equalAny(a, b any) bool {
	switch a := a.(type) {
	case []v1.Toleration:
		b := b.([]v1.Toleration)
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

func decodeOne(t *testing.T, name string) *v1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ms := Decode(data)
	if len(ms) != 1 || ms[0].Err != nil {
		t.Fatalf("%s: %+v", name, ms)
	}
	return ms[0].Pod
}

func TestImagePullPolicyDefault(t *testing.T) {
	t.Parallel()
	const digest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	tests := map[string]v1.PullPolicy{
		"nginx":                                v1.PullAlways,
		"nginx:latest":                         v1.PullAlways,
		"nginx:1.27":                           v1.PullIfNotPresent,
		"localhost:5000/nginx":                 v1.PullAlways,
		"localhost:5000/nginx:1":               v1.PullIfNotPresent,
		"nginx@" + digest:                      v1.PullIfNotPresent,
		"nginx:latest@" + digest:               v1.PullAlways,
		"registry.k8s.io/pause:3.10@" + digest: v1.PullIfNotPresent,
		// A reference that does not parse (a short digest): IfNotPresent,
		// as the API server defaults it (validation reports it).
		"nginx:latest@sha256:abcd": v1.PullIfNotPresent,
	}
	for image, want := range tests {
		c := v1.Container{Image: image}
		defaultContainer(&c)
		if c.ImagePullPolicy != want {
			t.Errorf("%s: %s, want %s", image, c.ImagePullPolicy, want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := func(mut func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{}
		p.Name, p.Namespace = "web", "default"
		p.Spec.Containers = []v1.Container{{Name: "app", Image: "nginx"}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	tests := map[string]struct {
		pod  *v1.Pod
		want []string
	}{
		"valid":              {pod: ok(nil)},
		"no name":            {pod: ok(func(p *v1.Pod) { p.Name = "" }), want: []string{"metadata.name: Required value"}},
		"bad name":           {pod: ok(func(p *v1.Pod) { p.Name = "Web" }), want: []string{`metadata.name: Invalid value: "Web"`}},
		"bad namespace":      {pod: ok(func(p *v1.Pod) { p.Namespace = "a.b" }), want: []string{`metadata.namespace: Invalid value: "a.b"`}},
		"no containers":      {pod: ok(func(p *v1.Pod) { p.Spec.Containers = nil }), want: []string{"spec.containers: Required value: at least one container"}},
		"no image":           {pod: ok(func(p *v1.Pod) { p.Spec.Containers[0].Image = " " }), want: []string{"spec.containers[0].image: Required value"}},
		"no container name":  {pod: ok(func(p *v1.Pod) { p.Spec.Containers[0].Name = "" }), want: []string{"spec.containers[0].name: Required value"}},
		"bad container name": {pod: ok(func(p *v1.Pod) { p.Spec.Containers[0].Name = "App_1" }), want: []string{`spec.containers[0].name: Invalid value: "App_1"`}},
		"duplicate with init": {pod: ok(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "app", Image: "busybox"}}
		}), want: []string{`spec.containers[0].name: Duplicate value: "app"`}},
		"negative grace": {pod: ok(func(p *v1.Pod) { g := int64(-5); p.Spec.TerminationGracePeriodSeconds = &g }),
			want: []string{"spec.terminationGracePeriodSeconds: Invalid value: -5: must be greater than or equal to 0"}},
		"zero deadline": {pod: ok(func(p *v1.Pod) { d := int64(0); p.Spec.ActiveDeadlineSeconds = &d }),
			want: []string{"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"}},
		"bad restart policy": {pod: ok(func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }),
			want: []string{`spec.restartPolicy: Unsupported value: "Sometimes"`}},
		"bad hostname": {pod: ok(func(p *v1.Pod) { p.Spec.Hostname = "a.b" }),
			want: []string{`spec.hostname: Invalid value: "a.b"`}},
		"bad subdomain": {pod: ok(func(p *v1.Pod) { p.Spec.Subdomain = "Sub" }),
			want: []string{`spec.subdomain: Invalid value: "Sub"`}},
		"hostnameOverride with dots": {pod: ok(func(p *v1.Pod) { o := "override.example.host"; p.Spec.HostnameOverride = &o })},
		"hostnameOverride not a subdomain": {pod: ok(func(p *v1.Pod) { o := "Not-RFC1123"; p.Spec.HostnameOverride = &o }),
			want: []string{`spec.hostnameOverride: Invalid value: "Not-RFC1123"`}},
		"hostnameOverride with FQDN": {pod: ok(func(p *v1.Pod) {
			o, t := "h", true
			p.Spec.HostnameOverride, p.Spec.SetHostnameAsFQDN = &o, &t
		}), want: []string{"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true"}},
		"hostnameOverride on host network": {pod: ok(func(p *v1.Pod) { o := "h"; p.Spec.HostnameOverride, p.Spec.HostNetwork = &o, true }),
			want: []string{"spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"}},
		"hostnameOverride too long": {pod: ok(func(p *v1.Pod) { o := strings.Repeat("a.", 32) + "a"; p.Spec.HostnameOverride = &o }),
			want: []string{"spec.hostnameOverride: Too long: may not be more than 64 bytes"}},
		"container restart policy and rules": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = new(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", RestartPolicy: new(v1.ContainerRestartPolicyOnFailure)}}
		})},
		"rules without restart policy": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		}), want: []string{"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used"}},
		"bad container restart policy": {pod: ok(func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", RestartPolicy: new(v1.ContainerRestartPolicy("Sometimes"))}}
		}), want: []string{`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`}},
		"bad restart rules": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = new(v1.ContainerRestartPolicyNever)
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{
				{Action: "Reboot", ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "Between", Values: make([]int32, 256)}},
				{Action: v1.ContainerRestartRuleActionRestart},
			}
		}), want: []string{
			`spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Reboot": supported values: "Restart", "RestartAllContainers"`,
			`spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Between": supported values: "In", "NotIn"`,
			"spec.containers[0].restartPolicyRules[0].exitCodes.values: Too many: 256: must have at most 255 items",
			"spec.containers[0].restartPolicyRules[1].exitCodes: Required value: must be specified"}},
		"too many restart rules": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy = new(v1.ContainerRestartPolicyNever)
			for range 21 {
				p.Spec.Containers[0].RestartPolicyRules = append(p.Spec.Containers[0].RestartPolicyRules, v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}})
			}
		}), want: []string{"spec.containers[0].restartPolicyRules: Too many: 21: must have at most 20 items"}},
		"bad port": {pod: ok(func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 70000}} }),
			want: []string{"spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"}},
		"request above limit": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}
		}), want: []string{`spec.containers[0].resources.requests[memory]: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi`}},
		"mount of no volume": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}), want: []string{`spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		"bad label": {pod: ok(func(p *v1.Pod) { p.Labels = map[string]string{"a b": "c"} }),
			want: []string{`metadata.labels: Invalid value: "a b"`}},
		"two errors": {pod: ok(func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "app"})
		}), want: []string{`spec.containers[1].name: Duplicate value: "app"`, "spec.containers[1].image: Required value"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			errs := Validate(tc.pod)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %q", errs, tc.want)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tc.want[i]) {
					t.Errorf("error %q does not contain %q", e.Error(), tc.want[i])
				}
			}
		})
	}
}

func TestStaticPodNameTooLongWithNode(t *testing.T) {
	t.Parallel()
	p := decodeOne(t, "besteffort.yaml")
	p.Name = strings.Repeat("a", 250)
	_, err := StaticPod(p, SourceFile, "/m/a.yaml", node, seenAt)
	if err == nil || !strings.Contains(err.Error(), `after appending "-<node name>"`) {
		t.Fatalf("want a name error, got %v", err)
	}
}

func TestStaticPodUID(t *testing.T) {
	t.Parallel()
	base := decodeOne(t, "guaranteed.yaml")
	changed := base.DeepCopy()
	changed.Spec.Containers[0].Image = "registry.k8s.io/etcd:3.5.16-0"
	uid := func(source, identity, nodeName string, p *v1.Pod) string {
		t.Helper()
		u, err := StaticPodUID(source, identity, nodeName, p)
		if err != nil {
			t.Fatal(err)
		}
		return string(u)
	}
	ref := uid(SourceFile, "/etc/kubernetes/manifests/g.yaml", node, base)
	tests := map[string]struct {
		got  string
		same bool
	}{
		"same input":       {uid(SourceFile, "/etc/kubernetes/manifests/g.yaml", node, base.DeepCopy()), true},
		"changed manifest": {uid(SourceFile, "/etc/kubernetes/manifests/g.yaml", node, changed), false},
		"other path":       {uid(SourceFile, "/etc/kubernetes/manifests/h.yaml", node, base), false},
		"other node":       {uid(SourceFile, "/etc/kubernetes/manifests/g.yaml", "node-2", base), false},
		"other source":     {uid(SourceHTTP, "/etc/kubernetes/manifests/g.yaml", node, base), false},
		"field boundaries": {uid(SourceFile, "/etc/kubernetes/manifests/g.yamlNode-1", "", base), false},
	}
	for name, tc := range tests {
		if (tc.got == ref) != tc.same {
			t.Errorf("%s: uid %s vs %s, same=%v wanted", name, tc.got, ref, tc.same)
		}
	}
	// A UID the manifest gives is kept.
	given := base.DeepCopy()
	given.UID = "0f5e1f3c-7a6b-4c1d-9e2f-3a4b5c6d7e8f"
	if p, err := StaticPod(given, SourceFile, "/m/g.yaml", node, seenAt); err != nil || p.UID != given.UID || p.Annotations[podutil.AnnotationConfigHash] != string(given.UID) {
		t.Errorf("manifest UID not kept: %v %v", p, err)
	}
	// The seen time is not hashed: two decodes at different times agree.
	a, err1 := StaticPod(base, SourceFile, "/m/g.yaml", node, seenAt)
	b, err2 := StaticPod(base, SourceFile, "/m/g.yaml", node, seenAt.Add(time.Hour))
	if err1 != nil || err2 != nil || a.UID != b.UID || a.Annotations[podutil.AnnotationConfigSeen] == b.Annotations[podutil.AnnotationConfigSeen] {
		t.Errorf("seen time must not change the UID: %s %s (%v %v)", a.UID, b.UID, err1, err2)
	}
	// Formatting does not matter: the canonical JSON is hashed.
	reformatted := Decode([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"namespace":"kube-system","name":"guaranteed","annotations":{"owner":"platform"}},
		"spec":{"priorityClassName":"system-node-critical",
		"initContainers":[{"name":"init","image":"busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000","command":["true"],"resources":{"limits":{"memory":"32Mi","cpu":"50m"}}}],
		"containers":[{"name":"app","image":"registry.k8s.io/etcd:3.5.15-0","resources":{"limits":{"cpu":"250m","memory":"128Mi"}}}]}}`))
	if len(reformatted) != 1 || reformatted[0].Err != nil {
		t.Fatalf("%+v", reformatted)
	}
	if got := uid(SourceFile, "/etc/kubernetes/manifests/g.yaml", node, reformatted[0].Pod); got != ref {
		t.Errorf("the same pod as JSON got uid %s, want %s", got, ref)
	}
}
