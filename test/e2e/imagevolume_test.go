package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kernelet/kernelet/test/env/containerd"
	"github.com/kernelet/kernelet/test/env/images"
)

// imageVolumeManifest is a static pod whose container mounts the image
// volume "art" of reference at /art and its etc directory (subPath) at
// /art-etc.
func imageVolumeManifest(name, reference, policy string) string {
	return podManifest(name, `["sleep"]`, "", 1) + `    volumeMounts:
    - {name: art, mountPath: /art}
    - {name: art, mountPath: /art-etc, subPath: etc}
  volumes:
  - name: art
    image: {reference: ` + reference + `, pullPolicy: ` + policy + `}
`
}

// TestImageVolume: on containerd 2 a pod mounts an image as a volume
// (ImageVolume, GA in v1.36): the image — served only by the registry
// mirror — is pulled with the volume's pull policy before the container
// starts, mounted read-only, its file readable at the mount and through a
// subPath; the container status reports the mount with the image's ID
// (ImageVolumeWithDigest). A volume whose image cannot be pulled holds
// the container back with ErrImagePull / ImagePullBackOff while a
// container of the same pod that does not mount it runs.
func TestImageVolume(t *testing.T) {
	cd := containerd.Shared2(t)
	n, rs, _ := newAgentWithCleanup(t, cd)
	_, is := criClients(t, cd)
	writeManifest(t, n.manifests, "art.yaml", imageVolumeManifest("art", images.MirrorOnlyImage, "IfNotPresent"))
	missing := imageVolumeManifest("missing", images.TestRegistryHost+"/no-such-image:1", "IfNotPresent") +
		`  - name: unused
    image: {reference: ` + images.TestRegistryHost + `/no-such-image:2}
`
	// A second container mounts nothing: it runs.
	missing = strings.Replace(missing, "  volumes:\n", `  - name: plain
    image: `+images.TestboxImage+`
    imagePullPolicy: IfNotPresent
    args: ["sleep"]
  volumes:
`, 1)
	writeManifest(t, n.manifests, "missing.yaml", missing)
	start := time.Now()
	n.start(t)
	pods := n.waitRunning(t, 90*time.Second, "art")
	t.Logf("image volume pod Running %v after the agent started", time.Since(start).Round(time.Millisecond))
	pod := pods["art"]

	want := images.MirrorOnlyImage + "\n"
	for script, out := range map[string]string{
		"cat /art/etc/kernelet-mirror-only": want,
		"cat /art-etc/kernelet-mirror-only": want,
		"test -x /art/testbox && echo yes":  "yes\n",
		"touch /art/x 2>&1 || echo refused": "refused\n",
	} {
		if got, err := execIn(t, rs, &pod, script); !strings.HasSuffix(got, out) {
			t.Errorf("%q in the pod = %q (%v), want %q", script, got, err, out)
		}
	}
	img, err := is.ImageStatus(t.Context(), &runtimeapi.ImageSpec{Image: images.MirrorOnlyImage}, false)
	if err != nil || img.GetImage() == nil {
		t.Fatalf("the image volume's image is not on the node: %v", err)
	}
	var vms []v1.VolumeMountStatus
	for _, cs := range pod.Status.ContainerStatuses {
		vms = cs.VolumeMounts
	}
	if len(vms) != 2 {
		t.Fatalf("volumeMounts %+v", vms)
	}
	for _, vm := range vms {
		if vm.Name != "art" || vm.VolumeStatus == nil || vm.VolumeStatus.Image == nil || vm.VolumeStatus.Image.ImageRef != img.GetImage().GetId() {
			t.Errorf("volume mount status %+v, want the image ref %s", vm, img.GetImage().GetId())
		}
	}

	// The missing image: the container mounting it waits with the pull's
	// reason; the unused volume and the plain container do not matter.
	waitFor(t, 60*time.Second, "the container with the missing image volume waits", func() (bool, error) {
		l, err := n.pods(t.Context())
		if err != nil {
			return false, err
		}
		var states []string
		for _, p := range l.Items {
			if p.Name != "missing-"+n.node {
				continue
			}
			byName := map[string]v1.ContainerStatus{}
			for _, cs := range p.Status.ContainerStatuses {
				byName[cs.Name] = cs
				states = append(states, cs.Name+"="+stateString(cs.State))
			}
			w := byName["app"].State.Waiting
			ok := w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && byName["plain"].State.Running != nil
			return ok, errString(strings.Join(states, " "))
		}
		return false, errString("no pod")
	})
}

// TestImageVolumeRefusedOnContainerd1: containerd 1.6 cannot mount images
// (it would create the container without the volume), so a pod with an
// image volume is refused at admission — Failed, UnexpectedAdmissionError,
// the field and the runtime's version named — and nothing of it reaches
// the runtime.
func TestImageVolumeRefusedOnContainerd1(t *testing.T) {
	n, rs, _ := newAgentWithCleanup(t, containerd.Shared1(t))
	writeManifest(t, n.manifests, "art.yaml", imageVolumeManifest("art", images.MirrorOnlyImage, "IfNotPresent"))
	n.start(t)
	var pod v1.Pod
	waitFor(t, 30*time.Second, "the image volume pod Failed", func() (bool, error) {
		p, ok := n.podStatus(t, "art")
		pod = p
		return ok && p.Status.Phase == v1.PodFailed, errString(string(p.Status.Phase))
	})
	if pod.Status.Reason != "UnexpectedAdmissionError" || !strings.Contains(pod.Status.Message,
		`spec.volumes[0].image: volume "art": image volumes are not supported by the runtime (containerd 1.6`) {
		t.Errorf("refused with %q: %q", pod.Status.Reason, pod.Status.Message)
	}
	t.Logf("refused: %s: %s", pod.Status.Reason, pod.Status.Message)
	if ctrs, sbs := podObjects(t, rs, pod.UID); len(ctrs)+len(sbs) > 0 {
		t.Errorf("the runtime holds %d containers and %d sandboxes of the refused pod", len(ctrs), len(sbs))
	}
}

// errString is a condition's "last error" for waitFor.
type errString string

func (e errString) Error() string { return string(e) }

// stateString is a container state in a word or two.
func stateString(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "Running"
	case s.Terminated != nil:
		return "Terminated/" + s.Terminated.Reason
	case s.Waiting != nil:
		return "Waiting/" + s.Waiting.Reason
	}
	return "?"
}
