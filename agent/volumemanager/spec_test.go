package volumemanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPaths(t *testing.T) {
	for name, tc := range map[string]struct{ got, want string }{
		// sha256("vol-1") from sha256sum(1).
		"staging": {StagingPath("/var/lib/kubelet", "d.csi", "vol-1"),
			"/var/lib/kubelet/plugins/kubernetes.io/csi/d.csi/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"},
		"target": {TargetPath("/var/lib/kubelet/pods", "uid-1", "pv-1"), "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount"},
		"unique": {string(UniqueVolumeName("d.csi", "vol-1")), "kubernetes.io/csi/d.csi^vol-1"},
		// sha256("h1d.csinode-a") from sha256sum(1).
		"attachment": {AttachmentName("h1", "d.csi", "node-a"), "csi-ce905117eceb881cd1bf3b4c15f253e1affe720165b536b35519398cf6fe53c5"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", name, tc.got, tc.want)
		}
	}
	if AttachmentName("h", "d", "n") == AttachmentName("h", "d", "m") {
		t.Error("AttachmentName does not depend on the node")
	}
}

func TestCheckClaim(t *testing.T) {
	now := metav1.Now()
	for name, tc := range map[string]struct {
		pvc  v1.PersistentVolumeClaim
		want string
	}{
		"bound":   {pvc: v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}},
		"pending": {pvc: v1.PersistentVolumeClaim{Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}, want: "PVC is not bound"},
		"deleted": {pvc: v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}}, want: "PVC is being deleted"},
		"no name": {pvc: v1.PersistentVolumeClaim{Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}, want: "PVC has empty pvc.Spec.VolumeName"},
	} {
		err := checkClaim(&tc.pvc)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "claim-uid"}}
	vol := v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c", ReadOnly: true}}}
	pod := &v1.Pod{}
	csiPV := func(mut func(*v1.PersistentVolume)) *v1.PersistentVolume {
		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{
			ClaimRef:               &v1.ObjectReference{UID: "claim-uid"},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			MountOptions:           []string{"noatime"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi", VolumeHandle: "h1", FSType: "ext4", VolumeAttributes: map[string]string{"a": "b"}}},
		}}
		if mut != nil {
			mut(pv)
		}
		return pv
	}
	if got, err := resolve(pod, vol, pvc, csiPV(func(pv *v1.PersistentVolume) { pv.Annotations = map[string]string{AnnotationVolumeGID: "5"} })); err != nil || got.GID != "5" {
		t.Errorf("the gid annotation: %q, %v", got.GID, err)
	}
	hp := csiPV(func(pv *v1.PersistentVolume) {
		pv.Spec.CSI, pv.Spec.HostPath = nil, &v1.HostPathVolumeSource{Path: "/srv/data"}
		pv.Annotations = map[string]string{AnnotationVolumeGID: "7"}
	})
	if got, err := resolve(pod, vol, pvc, hp); err != nil || got.HostPath == nil || got.HostPath.Path != "/srv/data" || !got.ReadOnly || got.GID != "7" || got.Driver != "" {
		t.Errorf("a hostPath PV: %+v, %v", got, err)
	}
	got, err := resolve(pod, vol, pvc, csiPV(nil))
	if err != nil || got.PVName != "pv-1" || got.Driver != "d.csi" || got.Handle != "h1" || !got.ReadOnly || got.FSType != "ext4" ||
		got.MountOptions[0] != "noatime" || got.Attributes["a"] != "b" {
		t.Errorf("resolve = %+v, %v", got, err)
	}
	for name, tc := range map[string]struct {
		mut         func(*v1.PersistentVolume)
		want        string
		unsupported bool
	}{
		"no claimRef": {mut: func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef = nil }, want: "found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim"},
		"other claim": {mut: func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "x" }, want: "found PV object pv-1 but its pv.Spec.ClaimRef.UID x does not point to claim.UID claim-uid"},
		"nfs": {mut: func(pv *v1.PersistentVolume) {
			pv.Spec.CSI = nil
			pv.Spec.NFS = &v1.NFSVolumeSource{Server: "s", Path: "/"}
		}, unsupported: true,
			want: "not supported by kernelet: PV pv-1: nfs persistent volumes are not mounted by kernelet (only CSI, hostPath and local ones)"},
		"local block": {mut: func(pv *v1.PersistentVolume) {
			pv.Spec.CSI, pv.Spec.Local, pv.Spec.VolumeMode = nil, &v1.LocalVolumeSource{Path: "/mnt"}, ptr.To(v1.PersistentVolumeBlock)
		}, unsupported: true, want: "not supported by kernelet: PV pv-1: a local persistent volume in volumeMode Block"},
		"local mount options": {mut: func(pv *v1.PersistentVolume) { pv.Spec.CSI = nil; pv.Spec.Local = &v1.LocalVolumeSource{Path: "/mnt"} },
			unsupported: true, want: "not supported by kernelet: PV pv-1: mountOptions [noatime] on a local persistent volume"},
		"hostPath block": {mut: func(pv *v1.PersistentVolume) {
			pv.Spec.CSI, pv.Spec.HostPath, pv.Spec.VolumeMode = nil, &v1.HostPathVolumeSource{Path: "/x"}, ptr.To(v1.PersistentVolumeBlock)
		}, unsupported: true},
	} {
		_, err := resolve(pod, vol, pvc, csiPV(tc.mut))
		switch {
		case err == nil:
			t.Errorf("%s: no error", name)
		case tc.unsupported != errors.Is(err, ErrUnsupported):
			t.Errorf("%s: %v, unsupported %v", name, err, tc.unsupported)
		case tc.want != "" && err.Error() != tc.want:
			t.Errorf("%s: %q, want %q", name, err, tc.want)
		}
	}
}

func TestAppliesFSGroup(t *testing.T) {
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	rwx := []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	gid := ptr.To[int64](1234)
	for name, tc := range map[string]struct {
		policy storagev1.FSGroupPolicy
		spec   volumeSpec
		fsGrp  *int64
		want   bool
	}{
		"no fsGroup":               {policy: storagev1.FileFSGroupPolicy, spec: volumeSpec{AccessModes: rwo}},
		"None":                     {policy: storagev1.NoneFSGroupPolicy, spec: volumeSpec{FSType: "ext4", AccessModes: rwo}, fsGrp: gid},
		"read-only":                {policy: storagev1.FileFSGroupPolicy, spec: volumeSpec{ReadOnly: true}, fsGrp: gid},
		"File":                     {policy: storagev1.FileFSGroupPolicy, spec: volumeSpec{AccessModes: rwx}, fsGrp: gid, want: true},
		"default without fsType":   {policy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, spec: volumeSpec{AccessModes: rwo}, fsGrp: gid},
		"default RWO with fsType":  {policy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, spec: volumeSpec{FSType: "ext4", AccessModes: rwo}, fsGrp: gid, want: true},
		"default RWX with fsType":  {policy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, spec: volumeSpec{FSType: "ext4", AccessModes: rwx}, fsGrp: gid},
		"default RWOP with fsType": {policy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, spec: volumeSpec{FSType: "xfs", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}}, fsGrp: gid, want: true},
	} {
		if got := appliesFSGroup(tc.policy, tc.spec, tc.fsGrp); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestDriverDecisions(t *testing.T) {
	if !attachRequired(nil) || attachRequired(&storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}) {
		t.Error("attachRequired: no object must mean required, false must mean not")
	}
	if fsGroupPolicy(nil) != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		t.Error("default fsGroupPolicy")
	}
	if requiresRepublish(nil) || !requiresRepublish(&storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{RequiresRepublish: ptr.To(true)}}) {
		t.Error("requiresRepublish")
	}
	if tokensInSecrets(nil) || !tokensInSecrets(&storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{ServiceAccountTokenInSecrets: ptr.To(true)}}) {
		t.Error("serviceAccountTokenInSecrets")
	}
	for modes, want := range map[v1.PersistentVolumeAccessMode]csipb.VolumeCapability_AccessMode_Mode{
		v1.ReadWriteOnce: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		v1.ReadOnlyMany:  csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		v1.ReadWriteMany: csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	} {
		if got := csiAccessMode([]v1.PersistentVolumeAccessMode{modes}); got != want {
			t.Errorf("%s → %v, want %v", modes, got, want)
		}
	}
}

func TestWaitError(t *testing.T) {
	vols := []v1.Volume{{Name: "b"}, {Name: "a"}, {Name: "ok"}}
	pending := map[string]volumeError{
		"a": {err: errors.New("error processing PVC ns/a: PVC is not bound"), unprocessed: true},
		"b": {err: errors.New("not attached"), unattached: true},
	}
	got := waitError(vols, pending, nil, false, false).Error()
	want := "Unable to attach or mount volumes: unmounted volumes=[a b], unattached volumes=[b], failed to process volumes=[a]: context deadline exceeded"
	if !strings.HasSuffix(got, want) || !strings.Contains(got, "PVC is not bound") {
		t.Errorf("waitError = %q, want it to end with %q", got, want)
	}
	if got := waitError(vols, pending, context.Canceled, true, true).Error(); strings.Contains(got, "Unable to attach") {
		t.Errorf("a permanent refusal is not a timeout: %q", got)
	}
}

func TestBlockSpec(t *testing.T) {
	block := ptr.To(v1.PersistentVolumeBlock)
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "claim-uid"}}
	vol := v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}
	pv := func(mode *v1.PersistentVolumeMode) *v1.PersistentVolume {
		return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: v1.PersistentVolumeSpec{
			VolumeMode: mode, ClaimRef: &v1.ObjectReference{UID: "claim-uid"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi", VolumeHandle: "h1"}}}}
	}
	podWith := func(c v1.Container) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{c}}} }
	asDevice := podWith(v1.Container{VolumeDevices: []v1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}})
	asMount := podWith(v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}})
	got, err := resolve(asDevice, vol, pvc, pv(block))
	if err != nil || !got.Block {
		t.Fatalf("block device: %+v, %v", got, err)
	}
	if c := capability(got, nil, ""); c.GetBlock() == nil || c.GetMount() != nil {
		t.Errorf("block capability %v", c)
	}
	for name, tc := range map[string]struct {
		pod  *v1.Pod
		mode *v1.PersistentVolumeMode
		want string
	}{
		"block in volumeMounts":       {asMount, block, "volume data has volumeMode Block, but is specified in volumeMounts"},
		"filesystem in volumeDevices": {asDevice, nil, "volume data has volumeMode Filesystem, but is specified in volumeDevices"},
	} {
		if _, err := resolve(tc.pod, vol, pvc, pv(tc.mode)); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	p := pathsOf("/var/lib/kubelet", "/var/lib/kubelet/pods", "uid-1", got)
	want := volumePaths{
		staging:     "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1",
		stagingData: "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/data",
		target:      "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-1",
		podPath:     "/var/lib/kubelet/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1",
		globalMap:   "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev/uid-1",
	}
	if p != want {
		t.Errorf("block paths\n %+v\nwant\n %+v", p, want)
	}
}

func TestInlineSpec(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	vol := v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "d.csi", ReadOnly: ptr.To(true),
		FSType: ptr.To("ext4"), VolumeAttributes: map[string]string{"a": "b"}, NodePublishSecretRef: &v1.LocalObjectReference{Name: "s"}}}}
	got, err := resolveInline(pod, vol)
	// sha256("uid-1scratch") from sha256sum(1).
	const handle = "csi-a919eb5a57ed1bf8c61a802fc713b36e9bfa4fbf009dfb5f4206d253a3a3dc32"
	if err != nil || !got.Inline || got.PVName != "scratch" || got.Handle != handle || !got.ReadOnly ||
		got.FSType != "ext4" || got.PublishSecretRef.Namespace != "ns" || got.Lifecycle() != storagev1.VolumeLifecycleEphemeral {
		t.Errorf("resolveInline = %+v, %v", got, err)
	}
	p := pathsOf("/r", "/r/pods", "uid-1", got)
	if p.staging != "" || p.target != "/r/pods/uid-1/volumes/kubernetes.io~csi/scratch/mount" || p.podPath != p.target {
		t.Errorf("inline paths %+v", p)
	}
	if podInfoAttrs(pod, true)["csi.storage.k8s.io/ephemeral"] != "true" || podInfoAttrs(pod, false)["csi.storage.k8s.io/ephemeral"] != "false" {
		t.Error("podInfoAttrs ephemeral key")
	}
}

func TestCheckLifecycle(t *testing.T) {
	eph, pers := storagev1.VolumeLifecycleEphemeral, storagev1.VolumeLifecyclePersistent
	only := func(m ...storagev1.VolumeLifecycleMode) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{Spec: storagev1.CSIDriverSpec{VolumeLifecycleModes: m}}
	}
	for name, tc := range map[string]struct {
		d    *storagev1.CSIDriver
		mode storagev1.VolumeLifecycleMode
		want string
	}{
		"no object, persistent":  {nil, pers, ""},
		"no object, ephemeral":   {nil, eph, `volume mode "Ephemeral" not supported by driver d.csi (no CSIDriver object)`},
		"persistent only":        {only(pers), eph, `volume mode "Ephemeral" not supported by driver d.csi (only supports ["Persistent"])`},
		"default modes":          {only(), eph, `volume mode "Ephemeral" not supported by driver d.csi (only supports ["Persistent"])`},
		"ephemeral only":         {only(eph), pers, `volume mode "Persistent" not supported by driver d.csi (only supports ["Ephemeral"])`},
		"both":                   {only(pers, eph), eph, ""},
		"default modes, persist": {only(), pers, ""},
	} {
		err := checkLifecycle(tc.d, "d.csi", tc.mode)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
