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
	"k8s.io/apimachinery/pkg/types"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/kernelet/kernelet/agent/csi"
	"github.com/kernelet/kernelet/agent/volume"
	"github.com/kernelet/kernelet/internal/mountinfo"
)

// ensure gets one volume of pod published and returns its path: the
// mount for a filesystem volume, the pod's device link for a block one.
// A published volume whose driver requires republishing is published
// again (kubelet's remount on every pod sync).
func (m *Manager) ensure(ctx context.Context, pod *v1.Pod, vol v1.Volume) (string, volumeError) {
	spec, err := m.resolveVolume(ctx, pod, vol)
	if err != nil {
		return "", volumeError{err: err, unprocessed: true}
	}
	if src := spec.HostPath; src != nil {
		if err := volume.CheckHostPath(src.Path, src.Type); err != nil {
			return "", volumeError{err: fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", spec.PVName, err)}
		}
		return src.Path, volumeError{}
	}
	if spec.Local != nil {
		m.want(pod.UID, spec.Unique())
		path, err := m.setUpLocal(ctx, pod, spec)
		if err != nil {
			return "", volumeError{err: err}
		}
		return path, volumeError{}
	}
	m.mu.Lock()
	if !spec.Inline {
		if m.desired[pod.UID] == nil {
			m.desired[pod.UID] = map[v1.UniqueVolumeName]bool{}
		}
		m.desired[pod.UID][spec.Unique()] = true
	}
	pub := m.published[pod.UID][spec.PVName]
	m.mu.Unlock()
	paths := pathsOf(m.cfg.RootDir, m.cfg.PodsDir, pod.UID, spec)
	republishing := pub != nil && pub.mounted
	if republishing && !m.republishes(ctx, pub) {
		m.expandOnline(ctx, pod, vol, spec, paths)
		return paths.podPath, volumeError{}
	}
	verr := m.mount(ctx, pod, spec, paths)
	if verr.err != nil && republishing {
		// As kubelet's remount: the pod keeps its volume, the failure is
		// reported and the next sync tries again.
		klog.FromContext(ctx).Error(verr.err, "Republishing a volume failed; it stays published", "pod", klog.KObj(pod), "volume", spec.Unique())
		if m.cfg.Warn != nil {
			m.cfg.Warn(pod, EventFailedMount, verr.err.Error())
		}
		return paths.podPath, volumeError{}
	}
	if verr.err != nil {
		return "", verr
	}
	if republishing {
		m.expandOnline(ctx, pod, vol, spec, paths)
	} else if err := m.expandAtMount(ctx, pod, vol, spec, paths); err != nil {
		// As kubelet's uncertain mount: published, but the pod does not
		// start on it; the next attempt publishes and expands again.
		m.mu.Lock()
		if p := m.published[pod.UID][spec.PVName]; p != nil {
			p.mounted = false
		}
		m.mu.Unlock()
		return "", volumeError{err: err}
	}
	return paths.podPath, volumeError{}
}

// mount attaches (waits for the attachment), stages and publishes one
// volume of pod at paths.
func (m *Manager) mount(ctx context.Context, pod *v1.Pod, spec volumeSpec, paths volumePaths) volumeError {
	l := m.volumeLock(spec.Unique())
	l.Lock()
	defer l.Unlock()
	cd, err := m.csiDriver(ctx, spec.Driver)
	if err != nil {
		return volumeError{err: fmt.Errorf("MountVolume.MountDevice failed for volume %q : %w", spec.PVName, err)}
	}
	var publishContext map[string]string
	if !spec.Inline && attachRequired(cd) {
		if publishContext, err = m.attachment(ctx, spec); err != nil {
			return volumeError{err: err, unattached: true}
		}
	}
	driver, err := m.cfg.Drivers.Lookup(spec.Driver)
	if err != nil {
		return volumeError{err: driverError(spec, err)}
	}
	c, err := m.cfg.Dial(driver.Endpoint)
	if err != nil {
		return volumeError{err: err}
	}
	defer func() { _ = c.Close() }()
	callCtx, cancel := context.WithTimeout(ctx, csi.Timeout)
	defer cancel()
	caps, err := c.NodeGetCapabilities(callCtx)
	if err != nil {
		return volumeError{err: fmt.Errorf("%s failed for volume %q : %w", stageOp(spec), spec.PVName, err)}
	}
	if !caps.StageUnstage || spec.Inline {
		paths.staging = ""
	} else if err := m.stage(callCtx, c, spec, paths, publishContext); err != nil {
		return volumeError{err: fmt.Errorf("%s failed for volume %q : %w", stageOp(spec), spec.PVName, err)}
	}
	if err := checkLifecycle(cd, spec.Driver, spec.Lifecycle()); err != nil {
		return volumeError{err: fmt.Errorf("MountVolume.SetUp failed for volume %q : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: %w", spec.PVName, err)}
	}
	if err := m.publish(callCtx, c, pod, spec, cd, caps, paths, publishContext); err != nil {
		return volumeError{err: fmt.Errorf("%s failed for volume %q : %w", publishOp(spec), spec.PVName, err)}
	}
	return volumeError{}
}

// republishes tells whether a published volume is published again at
// this sync: its CSIDriver requiresRepublish (read once for a volume
// found at reconstruction).
func (m *Manager) republishes(ctx context.Context, pub *publishedVol) bool {
	m.mu.Lock()
	checked, republish := pub.checked, pub.republish
	m.mu.Unlock()
	if checked {
		return republish
	}
	cd, err := m.csiDriver(ctx, pub.driver)
	if err != nil {
		return false // read again at the next sync
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pub.checked, pub.republish = true, requiresRepublish(cd)
	return pub.republish
}

// driverError is kubelet's error for a volume whose driver is not
// registered.
func driverError(spec volumeSpec, err error) error {
	if spec.Inline {
		return fmt.Errorf("MountVolume.SetUp failed for volume %q : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: %w", spec.PVName, err)
	}
	return fmt.Errorf("%s failed for volume %q : kubernetes.io/csi: attacher.MountDevice failed to create newCsiDriverClient: %w", stageOp(spec), spec.PVName, err)
}

// stageOp and publishOp name kubelet's operations in its messages.
func stageOp(spec volumeSpec) string {
	if spec.Block {
		return "MapVolume.SetUpDevice"
	}
	return "MountVolume.MountDevice"
}

func publishOp(spec volumeSpec) string {
	if spec.Block {
		return "MapVolume.MapPodDevice"
	}
	return "MountVolume.SetUp"
}

// resolveVolume reads the volume's PVC and PV (once per pod volume).
func (m *Manager) resolveVolume(ctx context.Context, pod *v1.Pod, vol v1.Volume) (volumeSpec, error) {
	m.mu.Lock()
	spec, ok := m.resolved[pod.UID][vol.Name]
	m.mu.Unlock()
	if ok {
		return spec, nil
	}
	if vol.CSI != nil {
		spec, err := resolveInline(pod, vol)
		if err == nil {
			m.remember(pod.UID, vol.Name, spec)
		}
		return spec, err
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
	if err := m.checkNodeAffinity(ctx, pv); err != nil {
		return volumeSpec{}, fmt.Errorf("MountVolume.NodeAffinity check failed for volume %q : %w", pv.Name, err)
	}
	m.remember(pod.UID, vol.Name, spec)
	return spec, nil
}

// checkNodeAffinity is kubelet's check that a PV with node affinity may
// be used on this node (its labels).
func (m *Manager) checkNodeAffinity(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.NodeAffinity == nil {
		return nil
	}
	node, err := m.cfg.Client.Nodes().Get(ctx, m.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", m.cfg.NodeName, err)
	}
	return pvAffinityMatches(pv, node.Labels)
}

// pvAffinityMatches is the check itself: the PV's required node selector
// terms against the node's labels, with component-helpers' error text
// (its storage/volume package is not used: it links client-go's scheme,
// which kernelet keeps out, cmd/kernelet.TestFootprintDependencies).
func pvAffinityMatches(pv *v1.PersistentVolume, labels map[string]string) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	matches, err := schedulingcorev1.MatchNodeSelectorTerms(node, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return err
	}
	if !matches {
		return fmt.Errorf("no matching NodeSelectorTerms")
	}
	return nil
}

// remember caches a pod volume's spec.
func (m *Manager) remember(uid types.UID, name string, spec volumeSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resolved[uid] == nil {
		m.resolved[uid] = map[string]volumeSpec{}
	}
	m.resolved[uid][name] = spec
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

// exhausted is kubelet's check at the end of a pod's wait
// (MutableCSINodeAllocatableCount): whether an unattached volume's
// attachment failed with ResourceExhausted, of a driver whose CSIDriver
// sets nodeAllocatableUpdatePeriodSeconds; such a driver's NodeGetInfo
// is read again into the CSINode (Config.UpdateDriver).
func (m *Manager) exhausted(ctx context.Context, pod *v1.Pod, pending map[string]volumeError) bool {
	found := false
	for name, pe := range pending {
		m.mu.Lock()
		spec, ok := m.resolved[pod.UID][name]
		m.mu.Unlock()
		if !pe.unattached || !ok || spec.Driver == "" || spec.Inline {
			continue
		}
		cd, err := m.csiDriver(ctx, spec.Driver)
		if err != nil || csi.UpdatePeriod(cd) == 0 {
			continue
		}
		va, err := m.cfg.Client.VolumeAttachments().Get(ctx, AttachmentName(spec.Handle, spec.Driver, m.cfg.NodeName), metav1.GetOptions{})
		if err != nil || !resourceExhausted(va) {
			continue
		}
		klog.FromContext(ctx).V(4).Info("Detected ResourceExhausted error for volume", "pluginName", spec.Driver, "volumeHandle", spec.Handle)
		found = true
		if m.cfg.UpdateDriver == nil {
			continue
		}
		if err := m.cfg.UpdateDriver(ctx, spec.Driver); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to update CSIDriver", "pluginName", spec.Driver)
		}
	}
	return found
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

// stage stages the volume at paths.staging unless it is staged; the
// caller holds its lock.
func (m *Manager) stage(ctx context.Context, c *csi.Client, spec volumeSpec, paths volumePaths, publishContext map[string]string) error {
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
	// A block volume's staging path is a directory of the driver's; a
	// filesystem volume's is the mount point under its data directory.
	for _, dir := range []string{paths.staging, paths.stagingData} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("kubernetes.io/csi: attacher.MountDevice failed to create dir %q: %w", dir, err)
		}
	}
	if err := writeVolData(paths.stagingData, stagingVolData(spec, m.cfg.NodeName)); err != nil {
		return err
	}
	m.mu.Lock()
	m.staged[u] = &stagedVol{driver: spec.Driver, handle: spec.Handle, pvName: spec.PVName, block: spec.Block} // uncertain until it answers
	m.mu.Unlock()
	_, err = c.Node().NodeStageVolume(ctx, &csipb.NodeStageVolumeRequest{
		VolumeId: spec.Handle, PublishContext: publishContext, StagingTargetPath: paths.staging,
		VolumeCapability: capability(spec, spec.MountOptions, ""), Secrets: secrets, VolumeContext: spec.Attributes,
	})
	if err != nil {
		return fmt.Errorf("rpc error: %w", err)
	}
	m.mu.Lock()
	m.staged[u].mounted = true
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume staged", "volume", u, "stagingPath", paths.staging, "block", spec.Block)
	return nil
}

// publish publishes the volume for pod (a block volume: mapped to the
// pod's device link too) and applies its fsGroup; the caller holds the
// volume's lock.
func (m *Manager) publish(ctx context.Context, c *csi.Client, pod *v1.Pod, spec volumeSpec, cd *storagev1.CSIDriver,
	caps csi.NodeCapabilities, paths volumePaths, publishContext map[string]string) error {
	secrets, err := m.secret(ctx, spec.PublishSecretRef)
	if err != nil {
		return err
	}
	attrs := spec.Attributes
	if podInfoOnMount(cd) {
		attrs = merge(attrs, podInfoAttrs(pod, spec.Inline))
	}
	tokens, err := m.tokenAttrs(ctx, pod, cd)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to get service accoount token attributes: %w", err)
	}
	if tokensInSecrets(cd) {
		secrets = merge(secrets, tokens)
	} else {
		attrs = merge(attrs, tokens)
	}
	var fsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup = sc.FSGroup
	}
	mountGroup := ""
	if caps.VolumeMountGroup && fsGroup != nil && !spec.Block {
		mountGroup = strconv.FormatInt(*fsGroup, 10)
	}
	if err := m.prepareTarget(spec, paths); err != nil {
		return err
	}
	m.mu.Lock()
	if m.published[pod.UID] == nil {
		m.published[pod.UID] = map[string]*publishedVol{}
	}
	// Recorded before the call: a failed or uncertain publish is
	// unpublished at teardown.
	prev := m.published[pod.UID][spec.PVName]
	pub := &publishedVol{pvName: spec.PVName, driver: spec.Driver, handle: spec.Handle, target: paths.target,
		block: spec.Block, inline: spec.Inline, republish: requiresRepublish(cd), checked: true,
		mounted: prev != nil && prev.mounted} // a republish keeps a published volume published
	m.published[pod.UID][spec.PVName] = pub
	m.mu.Unlock()
	_, err = c.Node().NodePublishVolume(ctx, &csipb.NodePublishVolumeRequest{
		VolumeId: spec.Handle, PublishContext: publishContext, StagingTargetPath: paths.staging, TargetPath: paths.target,
		VolumeCapability: capability(spec, spec.MountOptions, mountGroup), Readonly: spec.ReadOnly,
		Secrets: secrets, VolumeContext: attrs,
	})
	if err != nil {
		return fmt.Errorf("rpc error: %w", err)
	}
	if spec.Block {
		if err := mapDevice(paths); err != nil {
			return fmt.Errorf("blkUtil.MapDevice failed for volume %q: %w", spec.PVName, err)
		}
	} else if mountGroup == "" && appliesFSGroup(fsGroupPolicy(cd), spec, fsGroup) {
		var change *v1.PodFSGroupChangePolicy
		if sc := pod.Spec.SecurityContext; sc != nil {
			change = sc.FSGroupChangePolicy
		}
		if err := volume.SetOwnership(paths.target, *fsGroup, spec.ReadOnly, change); err != nil {
			return fmt.Errorf("applyFSGroup failed for vol %s: %w", spec.Handle, err)
		}
	}
	m.mu.Lock()
	pub.mounted = true
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Volume published", "pod", klog.KObj(pod), "volume", spec.Unique(), "target", paths.target, "block", spec.Block)
	return nil
}

// prepareTarget makes what kubelet makes before NodePublishVolume: the
// pod's volume directory and vol_data.json, or a block volume's publish
// directory (the driver makes the file).
func (m *Manager) prepareTarget(spec volumeSpec, paths volumePaths) error {
	dir := paths.targetData
	if spec.Block {
		dir = filepath.Dir(paths.target)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("kubernetes.io/csi: mounter.SetUpAt failed to create dir %q: %w", dir, err)
	}
	if spec.Block {
		return nil
	}
	return writeVolData(paths.targetData, podVolData(spec, m.cfg.NodeName))
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
