package podconfig

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidatePodForRuntimeAcceptsWhatItRuns(t *testing.T) {
	for name, pod := range map[string]*v1.Pod{
		"web pod":     webPod(),
		"minimal pod": {ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "i"}}}},
		"container restart policy and rules": {Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "c", Image: "i",
			RestartPolicy: ptr(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}}}}},
		"host namespaces with other sysctls": {Spec: v1.PodSpec{HostNetwork: true, HostIPC: true,
			SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.domainname", Value: "x"}}},
			Containers:      []v1.Container{{Name: "c", Image: "i"}}}},
	} {
		if err := ValidatePodForRuntime(pod); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestValidatePodForRuntimeListsEverything(t *testing.T) {
	hp := v1.ResourceName("hugepages-2Mi")
	pod := &v1.Pod{Spec: v1.PodSpec{
		OS:                  &v1.PodOS{Name: v1.Windows},
		RuntimeClassName:    ptr("kata"),
		HostUsers:           ptr(false),
		HostNetwork:         true,
		HostIPC:             true,
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
		HostAliases:         []v1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}},
		ResourceClaims:      []v1.PodResourceClaim{{Name: "gpu"}},
		Resources:           &v1.ResourceRequirements{Limits: v1.ResourceList{hp: qty("4Mi")}},
		SecurityContext: &v1.PodSecurityContext{
			SELinuxOptions:           &v1.SELinuxOptions{Level: "s0"},
			SupplementalGroupsPolicy: ptr(v1.SupplementalGroupsPolicyStrict),
			Sysctls:                  []v1.Sysctl{{Name: "net/ipv4/ip_forward", Value: "1"}, {Name: "kernel.shmmax", Value: "1"}, {Name: "fs.mqueue.msg_max", Value: "1"}},
		},
		Volumes: []v1.Volume{
			{Name: "ok", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{}}, {ClusterTrustBundle: &v1.ClusterTrustBundleProjection{}}}}}},
			{Name: "data", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}},
			{Name: "huge", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}},
		},
		InitContainers: []v1.Container{{Name: "init", Image: "i", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{}}},
			RestartPolicy: ptr(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{
				{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}},
				{Action: v1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{3}}},
				{Action: "RestartNode", ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{2}}},
			}}},
		Containers: []v1.Container{{
			Name: "app", Image: "i",
			Env: []v1.EnvVar{
				{Name: "OK", Value: "1"},
				{Name: "S", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}},
				{Name: "F", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.generateName"}}},
				{Name: "L", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['ok']"}}},
				{Name: "R", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "init", Resource: "limits.hugepages-2Mi"}}},
			},
			VolumeMounts: []v1.VolumeMount{
				{Name: "ok", MountPath: "/a", SubPathExpr: "$(POD)"},
				{Name: "ok", MountPath: "/b", RecursiveReadOnly: ptr(v1.RecursiveReadOnlyEnabled), ReadOnly: true},
				{Name: "ok", MountPath: "/c", RecursiveReadOnly: ptr(v1.RecursiveReadOnlyIfPossible), ReadOnly: true},
			},
			VolumeDevices: []v1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}},
			Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{hp: qty("2Mi"), "hugepages-1Gi": qty("1Gi")},
				Claims: []v1.ResourceClaim{{Name: "gpu"}},
			},
			SecurityContext: &v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount), SELinuxOptions: &v1.SELinuxOptions{}},
			Lifecycle:       &v1.Lifecycle{StopSignal: ptr(v1.SIGUSR1)},
		}},
	}}
	err := ValidatePodForRuntime(pod)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want an *UnsupportedError", err)
	}
	var paths []string
	for _, f := range ue.Fields {
		paths = append(paths, f.Path)
	}
	want := []string{
		"spec.os.name", "spec.hostNetwork", "spec.hostIPC",
		"spec.securityContext.supplementalGroupsPolicy",
		"spec.securityContext.sysctls[0]", "spec.securityContext.sysctls[1]", "spec.securityContext.sysctls[2]",
		"spec.volumes[1].projected.sources[1]", "spec.volumes[2]",
		"spec.initContainers[0].restartPolicyRules[2].action",
		"spec.containers[0].env[2]", "spec.containers[0].env[4]",
		"spec.containers[0].volumeMounts[1]",
		"spec.containers[0].lifecycle.stopSignal",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("paths =\n %q\nwant\n %q", paths, want)
	}
	msg := err.Error()
	for _, s := range []string{
		"unsupported pod fields: spec.os.name: windows pods cannot run on a Linux node; ",
		`spec.volumes[1].projected.sources[1]: volume "cfg": clusterTrustBundle and podCertificate projections are not supported yet`,
		`spec.volumes[2]: volume "data": nfs volumes are not supported yet`,
		`spec.securityContext.sysctls[0]: sysctl "net.ipv4.ip_forward" would change the node's network namespace (hostNetwork)`,
		`spec.containers[0].env[2]: env "F": fieldRef "metadata.generateName" is not supported`,
		`spec.initContainers[0].restartPolicyRules[2].action: restart rule action "RestartNode" is not supported (only "Restart" and "RestartAllContainers")`,
	} {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q:\n%s", s, msg)
		}
	}
}

// The fields of v1.37 that kernelet does not act on, one pod each: the
// field path and the reason.
func TestValidatePodForRuntimeNewFields(t *testing.T) {
	ctr := func(mod func(c *v1.Container)) *v1.Pod {
		c := v1.Container{Name: "app", Image: "i"}
		mod(&c)
		return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	}
	vol := func(src v1.VolumeSource) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "v", VolumeSource: src}}, Containers: []v1.Container{{Name: "app", Image: "i"}}}}
	}
	uid := ptr(int64(1000))
	h2c, h1 := ptr(v1.HTTPProtocolHTTP2), ptr(v1.HTTPProtocolHTTP1)
	tls, plain := ptr(v1.GRPCProbeModeTLS), ptr(v1.GRPCProbeModePlaintext)
	cases := map[string]struct {
		pod  *v1.Pod
		want string // "" when the pod is accepted
	}{
		"h2c liveness probe": {ctr(func(c *v1.Container) {
			c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80), Protocol: h2c}}}
		}), "spec.containers[0].livenessProbe.httpGet.protocol: HTTP/2 (h2c) probes are not supported yet"},
		"http1 probe": {ctr(func(c *v1.Container) {
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80), Protocol: h1}}}
		}), ""},
		"grpc tls startup probe": {ctr(func(c *v1.Container) {
			c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Mode: tls}}}
		}), "spec.containers[0].startupProbe.grpc.mode: gRPC probes over TLS are not supported yet"},
		"grpc plaintext probe": {ctr(func(c *v1.Container) {
			c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000, Mode: plain}}}
		}), ""},
		"bind mount options": {ctr(func(c *v1.Container) {
			c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/v", BindMountOptions: []string{"noexec"}}}
		}), `spec.containers[0].volumeMounts[0].bindMountOptions: volume mount "v": bind mount options are not supported yet`},
		"emptyDir mode": {vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Mode: ptr(int32(0o700))}}),
			`spec.volumes[0].emptyDir.mode: volume "v": the mode of an emptyDir is not supported yet`},
		"configMap default user": {vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{DefaultUser: uid}}),
			`spec.volumes[0].configMap.defaultUser: volume "v": files owned by a chosen user are not supported yet`},
		"secret item user": {vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "a"}, {Key: "b", Path: "b", User: uid}}}}),
			`spec.volumes[0].secret.items[1].user: volume "v": files owned by a chosen user are not supported yet`},
		"downwardAPI item user": {vol(v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "n", User: uid}}}}),
			`spec.volumes[0].downwardAPI.items[0].user: volume "v": files owned by a chosen user are not supported yet`},
		"projected token user": {vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{}}, {ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t", User: uid}}}}}),
			`spec.volumes[0].projected.sources[1].serviceAccountToken.user: volume "v": files owned by a chosen user are not supported yet`},
		"projected default user": {vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultUser: uid}}),
			`spec.volumes[0].projected.defaultUser: volume "v": files owned by a chosen user are not supported yet`},
		"projected without users": {vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{Secret: &v1.SecretProjection{Items: []v1.KeyToPath{{Key: "a", Path: "a"}}}}}}}), ""},
		"extended resource claim": {&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "i"}}},
			Status: v1.PodStatus{ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "gpu-claim"}}}, ""},
		"node allocatable claim": {&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "i"}}},
			Status: v1.PodStatus{NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "cpu-claim"}}}},
			"status.nodeAllocatableResourceClaimStatuses: node resources allocated by dynamic resource allocation are not supported"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidatePodForRuntime(tc.pod)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("must be accepted: %v", err)
				}
				return
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) || len(ue.Fields) != 1 {
				t.Fatalf("want one unsupported field, got %v", err)
			}
			if got := ue.Fields[0].Path + ": " + ue.Fields[0].Reason; got != tc.want {
				t.Errorf("got\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
