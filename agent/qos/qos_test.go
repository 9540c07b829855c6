package qos

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kernelet/kernelet/cgroups"
)

// res builds a ResourceList from "cpu", "memory" pairs; "" leaves one out.
func res(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// ctr is a container with requests (reqCPU, reqMem) and limits (limCPU,
// limMem); "" leaves a value unset.
func ctr(name, reqCPU, reqMem, limCPU, limMem string) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: res(reqCPU, reqMem), Limits: res(limCPU, limMem)}}
}

func sidecar(c v1.Container) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func pod(init []v1.Container, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: containers}}
}

func withPodLevel(p *v1.Pod, reqs, lims v1.ResourceList) *v1.Pod {
	p.Spec.Resources = &v1.ResourceRequirements{Requests: reqs, Limits: lims}
	return p
}

func TestComputeClass(t *testing.T) {
	g := ctr("g", "1", "1Gi", "1", "1Gi")
	be := ctr("be", "", "", "", "")
	cases := map[string]struct {
		pod  *v1.Pod
		want cgroups.QOSClass
	}{
		"no containers":                          {pod(nil), cgroups.BestEffort},
		"best effort":                            {pod(nil, be, ctr("b2", "", "", "", "")), cgroups.BestEffort},
		"only other resources is best effort":    {pod(nil, v1.Container{Name: "x", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}}), cgroups.BestEffort},
		"guaranteed":                             {pod(nil, g), cgroups.Guaranteed},
		"guaranteed by limits only (defaulting)": {pod(nil, ctr("l", "", "", "500m", "128Mi")), cgroups.Guaranteed},
		"guaranteed 1000m equals 1":              {pod(nil, ctr("q", "1000m", "1073741824", "1", "1Gi")), cgroups.Guaranteed},
		"request below limit":                    {pod(nil, ctr("b", "500m", "1Gi", "1", "1Gi")), cgroups.Burstable},
		"cpu only":                               {pod(nil, ctr("c", "1", "", "1", "")), cgroups.Burstable},
		"memory limit only":                      {pod(nil, ctr("m", "", "", "", "1Gi")), cgroups.Burstable},
		"request without limit":                  {pod(nil, ctr("r", "100m", "", "", "")), cgroups.Burstable},
		"explicit zero request with limit":       {pod(nil, ctr("z", "0", "1Gi", "1", "1Gi")), cgroups.Burstable},
		"guaranteed and best effort mixed":       {pod(nil, g, be), cgroups.Burstable},
		"best effort then guaranteed":            {pod(nil, be, g), cgroups.Burstable},
		"init container best effort":             {pod([]v1.Container{be}, g), cgroups.Burstable},
		"init container guaranteed":              {pod([]v1.Container{ctr("i", "2", "2Gi", "2", "2Gi")}, g), cgroups.Guaranteed},
		"sidecar burstable":                      {pod([]v1.Container{sidecar(ctr("s", "100m", "", "", ""))}, g), cgroups.Burstable},
		"unequal guaranteed containers":          {pod(nil, g, ctr("g2", "2", "3Gi", "2", "3Gi")), cgroups.Guaranteed},
		"pod level guaranteed, containers none":  {withPodLevel(pod(nil, be), res("1", "1Gi"), res("1", "1Gi")), cgroups.Guaranteed},
		"pod level limits only default requests": {withPodLevel(pod(nil, be), nil, res("1", "1Gi")), cgroups.Guaranteed},
		"pod level limits, containers request less": {
			withPodLevel(pod(nil, ctr("c", "500m", "", "", "")), nil, res("1", "1Gi")), cgroups.Burstable},
		"pod level requests only":                {withPodLevel(pod(nil, g), res("1", "1Gi"), nil), cgroups.Burstable},
		"pod level cpu only":                     {withPodLevel(pod(nil, g), res("1", ""), res("1", "")), cgroups.Burstable},
		"empty pod level resources are ignored":  {withPodLevel(pod(nil, g), nil, nil), cgroups.Guaranteed},
		"pod level with other resources ignored": {withPodLevel(pod(nil, g), v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, nil), cgroups.Guaranteed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ComputeClass(tc.pod); got != tc.want {
				t.Errorf("ComputeClass = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClassPrefersStatus(t *testing.T) {
	p := pod(nil, ctr("g", "1", "1Gi", "1", "1Gi"))
	if got := Class(p); got != cgroups.Guaranteed {
		t.Fatalf("Class = %v", got)
	}
	p.Status.QOSClass = v1.PodQOSBurstable // e.g. after an in-place resize
	if got := Class(p); got != cgroups.Burstable {
		t.Fatalf("Class with status = %v, want Burstable", got)
	}
	p.Status.QOSClass = "Bogus"
	if got := Class(p); got != cgroups.Guaranteed {
		t.Fatalf("Class with bogus status = %v, want computed Guaranteed", got)
	}
	for _, c := range []cgroups.QOSClass{cgroups.Guaranteed, cgroups.Burstable, cgroups.BestEffort} {
		if FromAPI(ToAPI(c)) != c {
			t.Errorf("round trip of %v", c)
		}
	}
	if ToAPI(0) != "" || FromAPI("") != 0 {
		t.Error("zero values do not map to zero values")
	}
}

func TestPodRequestsAndLimits(t *testing.T) {
	const mi = int64(1) << 20
	cases := map[string]struct {
		pod          *v1.Pod
		reqs, limits Amounts
	}{
		"sum of regular containers": {
			pod(nil, ctr("a", "100m", "64Mi", "200m", "128Mi"), ctr("b", "250m", "32Mi", "", "")),
			Amounts{350, 96 * mi}, Amounts{200, 128 * mi}},
		"requests default to limits": {
			pod(nil, ctr("a", "", "", "300m", "10Mi")),
			Amounts{300, 10 * mi}, Amounts{300, 10 * mi}},
		"init container larger than the app sum": {
			pod([]v1.Container{ctr("init", "2", "1Gi", "2", "1Gi")}, ctr("a", "100m", "64Mi", "", "")),
			Amounts{2000, 1024 * mi}, Amounts{2000, 1024 * mi}},
		"max is per resource": {
			pod([]v1.Container{ctr("init", "2", "10Mi", "", "")}, ctr("a", "100m", "64Mi", "", "")),
			Amounts{2000, 64 * mi}, Amounts{}},
		"sidecar counts with the app containers": {
			pod([]v1.Container{sidecar(ctr("s", "100m", "50Mi", "", ""))}, ctr("a", "200m", "100Mi", "", "")),
			Amounts{300, 150 * mi}, Amounts{}},
		// init1 needs 500m alone; sidecar s1 (100m) starts; init2 needs
		// 400m + 100m = 500m; s2 (300m): sidecars 400m; app 50m + 400m.
		"init after sidecars needs their amount too": {
			pod([]v1.Container{
				ctr("init1", "500m", "", "", ""),
				sidecar(ctr("s1", "100m", "", "", "")),
				ctr("init2", "400m", "", "", ""),
				sidecar(ctr("s2", "300m", "", "", "")),
				ctr("init3", "250m", "", "", ""), // 250 + 400 = 650
			}, ctr("a", "50m", "", "", "")),
			Amounts{CPUMilli: 650}, Amounts{}},
		"pod level replaces what it sets": {
			withPodLevel(pod(nil, ctr("a", "100m", "64Mi", "200m", "128Mi")), res("", "1Gi"), res("", "2Gi")),
			Amounts{100, 1024 * mi}, Amounts{200, 2048 * mi}},
		"pod level request defaults to container requests": {
			withPodLevel(pod(nil, ctr("a", "100m", "", "", ""), ctr("b", "", "", "", "")), nil, res("1", "1Gi")),
			Amounts{100, 1024 * mi}, Amounts{1000, 1024 * mi}},
		"overhead is not included": {
			func() *v1.Pod {
				p := pod(nil, ctr("a", "100m", "64Mi", "100m", "64Mi"))
				p.Spec.Overhead = res("250m", "120Mi")
				return p
			}(),
			Amounts{100, 64 * mi}, Amounts{100, 64 * mi}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodRequests(tc.pod); got != tc.reqs {
				t.Errorf("PodRequests = %+v, want %+v", got, tc.reqs)
			}
			if got := PodLimits(tc.pod); got != tc.limits {
				t.Errorf("PodLimits = %+v, want %+v", got, tc.limits)
			}
		})
	}
}

func TestPodResources(t *testing.T) {
	const mi = int64(1) << 20
	withOverhead := func(p *v1.Pod) *v1.Pod {
		p.Spec.Overhead = res("250m", "120Mi")
		p.UID = "uid-1"
		return p
	}
	cases := map[string]struct {
		pod  *v1.Pod
		want cgroups.PodResources
	}{
		"best effort": {pod(nil, ctr("a", "", "", "", "")),
			cgroups.PodResources{QOS: cgroups.BestEffort, AllCPULimits: false, AllMemoryLimits: false}},
		"guaranteed": {pod(nil, ctr("a", "500m", "256Mi", "500m", "256Mi"), ctr("b", "", "", "1", "1Gi")),
			cgroups.PodResources{QOS: cgroups.Guaranteed, CPURequestMilli: 1500, CPULimitMilli: 1500,
				MemoryRequestBytes: 1280 * mi, MemoryLimitBytes: 1280 * mi, AllCPULimits: true, AllMemoryLimits: true}},
		"one container without memory limit": {pod(nil, ctr("a", "100m", "64Mi", "200m", "128Mi"), ctr("b", "", "", "100m", "")),
			cgroups.PodResources{QOS: cgroups.Burstable, CPURequestMilli: 200, CPULimitMilli: 300,
				MemoryRequestBytes: 64 * mi, MemoryLimitBytes: 128 * mi, AllCPULimits: true, AllMemoryLimits: false}},
		"init container without limits counts": {pod([]v1.Container{ctr("i", "", "", "", "")}, ctr("a", "1", "1Gi", "1", "1Gi")),
			cgroups.PodResources{QOS: cgroups.Burstable, CPURequestMilli: 1000, CPULimitMilli: 1000,
				MemoryRequestBytes: 1024 * mi, MemoryLimitBytes: 1024 * mi}},
		"overhead added to requests and non-zero limits": {withOverhead(pod(nil, ctr("a", "100m", "64Mi", "", "128Mi"))),
			cgroups.PodResources{UID: "uid-1", QOS: cgroups.Burstable, CPURequestMilli: 350, CPULimitMilli: 0,
				MemoryRequestBytes: 184 * mi, MemoryLimitBytes: 248 * mi, AllMemoryLimits: true}},
		"pod level limits declare all limits": {withPodLevel(pod(nil, ctr("a", "", "", "", "")), nil, res("2", "1Gi")),
			cgroups.PodResources{QOS: cgroups.Guaranteed, CPURequestMilli: 2000, CPULimitMilli: 2000,
				MemoryRequestBytes: 1024 * mi, MemoryLimitBytes: 1024 * mi, AllCPULimits: true, AllMemoryLimits: true,
				PodLevelResources: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodResources(tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PodResources =\n %+v, want\n %+v", got, tc.want)
			}
		})
	}
}

func TestIsSidecar(t *testing.T) {
	s := sidecar(ctr("s", "", "", "", ""))
	onFailure := v1.ContainerRestartPolicyOnFailure
	p := pod([]v1.Container{s, ctr("i", "", "", "", "")}, ctr("a", "", "", "", ""))
	cases := map[string]struct {
		c    v1.Container
		want bool
	}{
		"restartable init container":           {s, true},
		"plain init container":                 {p.Spec.InitContainers[1], false},
		"regular container":                    {p.Spec.Containers[0], false},
		"regular container with Always policy": {sidecar(ctr("a", "", "", "", "")), false},
		"init container with OnFailure policy": {v1.Container{Name: "i", RestartPolicy: &onFailure}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsSidecar(p, &tc.c); got != tc.want {
				t.Errorf("IsSidecar = %v, want %v", got, tc.want)
			}
		})
	}
}
