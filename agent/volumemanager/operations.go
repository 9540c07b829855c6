package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/internal/mountinfo"
)

// ensure gets one PVC volume of pod published and returns its path.
func (m *Manager) ensure(ctx context.Context, pod *v1.Pod, vol v1.Volume) (string, volumeError) {
	spec, err := m.resolveVolume(ctx, pod, vol)
	if err != nil {
		return "", volumeError{err: err, unprocessed: true}
	}
	m.mu.Lock()
	if m.desired[pod.UID] == nil {
		m.desired[pod.UID] = map[v1.UniqueVolumeName]bool{}
	}
	m.desired[pod.UID][spec.Unique()] = true
	pub := m.published[pod.UID][spec.PVName]
	m.mu.Unlock()
	if pub != nil && pub.mounted {
		return pub.target, volumeError{}
	}

	l := m.volumeLock(spec.Unique())
	l.Lock()
	defer l.Unlock()
	cd, err := m.csiDriver(ctx, spec.Driver)
	if err != nil {
		return "", volumeError{err: fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", spec.PVName, err)}
	}
	if err := checkDriver(cd); err != nil {
		return "", volumeError{err: err}
	}
	var publishContext map[string]string
	if attachRequired(cd) {
		if publishContext, err = m.attachment(ctx, spec); err != nil {
			return "", volumeError{err: err, unattached: true}
		}
	}
	driver, err := m.cfg.Drivers.Lookup(spec.Driver)
	if err != nil {
		return "", volumeError{err: fmt.Errorf("MountVolume.MountDevice failed for volume %q : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: %w", spec.PVName, err)}
	}
	c, err := m.cfg.Dial(driver.Endpoint)
	if err != nil {
		return "", volumeError{err: err}
	}
	defer func() { _ = c.Close() }()
	callCtx, cancel := context.WithTimeout(ctx, csi.Timeout)
	defer cancel()
	caps, err := c.NodeGetCapabilities(callCtx)
	if err != nil {
		return "", volumeError{err: fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", spec.PVName, err)}
	}
	staging := ""
	if caps.StageUnstage {
		staging = StagingPath(m.cfg.RootDir, spec.Driver, spec.Handle)
		if err := m.stage(callCtx, c, spec, staging, publishContext); err != nil {
			return "", volumeError{err: fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", spec.PVName, err)}
		}
	}
	target, err := m.publish(callCtx, c, pod, spec, cd, caps, staging, publishContext)
	if err != nil {
		return "", volumeError{err: fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", spec.PVName, err)}
	}
	return target, volumeError{}
}

// resolveVolume reads the volume's PVC and PV (once per pod volume).
func (m *Manager) resolveVolume(ctx context.Context, pod *v1.Pod, vol v1.Volume) (volumeSpec, error) {
	m.mu.Lock()
	spec, ok := m.resolved[pod.UID][vol.Name]
	m.mu.Unlock()
	if ok {
		return spec, nil
	}
	claim, _, ephemeral := claimOf(pod, vol)
	wrap := func(err error) error { return fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claim, err) }
	pvc, err := m.cfg.Client.PersistentVolumeClaims(pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return volumeSpec{}, wrap(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	if err := checkClaim(pvc); err != nil {
		return volumeSpec{}, wrap(err)
	}
	if ephemeral {
		if err := checkEphemeralClaim(pod, pvc); err != nil {
			return volumeSpec{}, err
		}
	}
	pv, err := m.cfg.Client.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return volumeSpec{}, wrap(fmt.Errorf("failed to fetch PV %s from API server: %w", pvc.Spec.VolumeName, err))
	}
	spec, err = resolve(pod, vol, pvc, pv)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return volumeSpec{}, err
		}
		return volumeSpec{}, wrap(err)
	}
	m.mu.Lock()
	if m.resolved[pod.UID] == nil {
		m.resolved[pod.UID] = map[string]volumeSpec{}
	}
	m.resolved[pod.UID][vol.Name] = spec
	m.mu.Unlock()
	return spec, nil
}

// csiDriver reads the CSIDriver object; nil when there is none.
func (m *Manager) csiDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error) {
	d, err := m.cfg.Client.CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

// attachment waits for nothing: it reads the volume's VolumeAttachment and
// returns its attachment metadata once attached.
func (m *Manager) attachment(ctx context.Context, spec volumeSpec) (map[string]string, error) {
	name := AttachmentName(spec.Handle, spec.Driver, m.cfg.NodeName)
	va, err := m.cfg.Client.VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("MountVolume.WaitForAttach failed for volume %q : volume attachment %s: %w", spec.PVName, name, err)
	}
	if !va.Status.Attached {
		msg := ""
		if e := va.Status.AttachError; e != nil {
			msg = ": " + e.Message
		}
		return nil, fmt.Errorf("MountVolume.WaitForAttach failed for volume %q : volume %s is not attached yet (VolumeAttachment %s)%s", spec.PVName, spec.Handle, name, msg)
	}
	return va.Status.AttachmentMetadata, nil
}

// secret reads a stage or publish secret's data.
func (m *Manager) secret(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := m.cfg.Client.Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("fetching secret %s/%s failed: %w", ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}

// stage stages the volume unless it is staged; the caller holds its lock.
func (m *Manager) stage(ctx context.Context, c *csi.Client, spec volumeSpec, staging string, publishContext map[string]string) error {
	u := spec.Unique()
	m.mu.Lock()
	st := m.staged[u]
	m.mu.Unlock()
	if st != nil && st.mounted {
		return nil
	}
	secrets, err := m.secret(ctx, spec.StageSecretRef)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to create dir %q: %w", staging, err)
	}
	if err := writeVolData(filepath.Dir(staging), stagingVolData(spec.Driver, spec.Handle)); err != nil {
		return err
	}
	m.mu.Lock()
	m.staged[u] = &stagedVol{driver: spec.Driver, handle: spec.Handle} // uncertain until it answers
	m.mu.Unlock()
	_, err = c.Node().NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId: spec.Handle, PublishContext: publishContext, StagingTargetPath: staging,
		VolumeCapability: capability(spec, spec.MountOptions, ""), Secrets: secrets, VolumeContext: spec.Attributes,
	})
	if err != nil {
		return fmt.Errorf("rpc error: %w", err)
	}
	m.mu.Lock()
	m.staged[u].mounted = true
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume staged", "volume", u, "stagingPath", staging)
	return nil
}

// publish publishes the volume for pod and applies its fsGroup; the caller
// holds the volume's lock.
func (m *Manager) publish(ctx context.Context, c *csi.Client, pod *v1.Pod, spec volumeSpec, cd *storagev1.CSIDriver,
	caps csi.NodeCapabilities, staging string, publishContext map[string]string) (string, error) {
	dir := PodVolumeDir(m.cfg.PodsDir, pod.UID, spec.PVName)
	target := filepath.Join(dir, "mount")
	secrets, err := m.secret(ctx, spec.PublishSecretRef)
	if err != nil {
		return "", err
	}
	attrs := spec.Attributes
	if podInfoOnMount(cd) {
		attrs = merge(attrs, podInfoAttrs(pod))
	}
	var fsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup = sc.FSGroup
	}
	policy := fsGroupPolicy(cd)
	mountGroup := ""
	if caps.VolumeMountGroup && fsGroup != nil {
		mountGroup = strconv.FormatInt(*fsGroup, 10)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to create dir %q: %w", dir, err)
	}
	if err := writeVolData(dir, podVolData(spec.PVName, spec.Driver, spec.Handle, m.cfg.NodeName)); err != nil {
		return "", err
	}
	m.mu.Lock()
	if m.published[pod.UID] == nil {
		m.published[pod.UID] = map[string]*publishedVol{}
	}
	// Recorded before the call: a failed or uncertain publish is
	// unpublished at teardown.
	m.published[pod.UID][spec.PVName] = &publishedVol{pvName: spec.PVName, driver: spec.Driver, handle: spec.Handle, target: target}
	m.mu.Unlock()
	_, err = c.Node().NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: spec.Handle, PublishContext: publishContext, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: capability(spec, spec.MountOptions, mountGroup), Readonly: spec.ReadOnly,
		Secrets: secrets, VolumeContext: attrs,
	})
	if err != nil {
		return "", fmt.Errorf("rpc error: %w", err)
	}
	if mountGroup == "" && appliesFSGroup(policy, spec, fsGroup) {
		var change *v1.PodFSGroupChangePolicy
		if sc := pod.Spec.SecurityContext; sc != nil {
			change = sc.FSGroupChangePolicy
		}
		if err := volume.SetOwnership(target, *fsGroup, spec.ReadOnly, change); err != nil {
			return "", fmt.Errorf("applyFSGroup failed for vol %s: %w", spec.Handle, err)
		}
	}
	m.mu.Lock()
	m.published[pod.UID][spec.PVName].mounted = true
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume published", "pod", klog.KObj(pod), "volume", spec.Unique(), "target", target)
	return target, nil
}

// writeVolData writes dir/vol_data.json.
func writeVolData(dir string, data map[string]string) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, volDataFile), b, 0o640); err != nil {
		return fmt.Errorf("kubernetes.io/csi: failed to save volume info data: %w", err)
	}
	return nil
}

// readVolData reads dir/vol_data.json.
func readVolData(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, volDataFile))
	if err != nil {
		return nil, err
	}
	data := map[string]string{}
	if err := json.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, volDataFile), err)
	}
	return data, nil
}

// isMountPoint is mountinfo.IsMountPoint.
var isMountPoint = mountinfo.IsMountPoint
