package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kernelet/kernelet/agent/qos"
)

// sourceKind names a volume source as the API does ("persistentVolumeClaim").
func sourceKind(src *v1.VolumeSource) string {
	v := reflect.ValueOf(*src)
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "unknown"
}

// EmptyDirMode is the mode a new emptyDir of medium gets before its fsGroup
// ownership (which adds the setgid bit), kubelet's: everyone may write
// (0777), and a tmpfs keeps its root's sticky bit (1777: kubelet mounts
// it without a mode option), as /tmp has it.
func EmptyDirMode(medium v1.StorageMedium) os.FileMode {
	if medium == v1.StorageMediumMemory {
		return 0o777 | os.ModeSticky
	}
	return 0o777
}

// EmptyDirSize is the size of a memory-backed emptyDir: its sizeLimit,
// bounded by the pod's memory limit and the node's allocatable memory
// (each when known, > 0); 0 means no size option.
func EmptyDirSize(pod *v1.Pod, src *v1.EmptyDirVolumeSource, nodeAllocatable int64) int64 {
	size := nodeAllocatable
	if r := qos.PodResources(pod); r.AllMemoryLimits && r.MemoryLimitBytes > 0 && (size <= 0 || r.MemoryLimitBytes < size) {
		size = r.MemoryLimitBytes
	}
	if src.SizeLimit != nil && src.SizeLimit.Value() > 0 && (size <= 0 || src.SizeLimit.Value() < size) {
		size = src.SizeLimit.Value()
	}
	return size
}

// setUpEmptyDir makes the emptyDir (on a tmpfs for medium Memory, a
// hugetlbfs for HugePages and HugePages-<size>: HugePagesPageSize). Until
// its set-up completed once (the ready marker, see readyMarker), it gets
// EmptyDirMode and, with an fsGroup, kubelet's volume ownership
// (fsGroupChangePolicy honoured), also when an earlier attempt failed
// half-way; a ready one (the agent restarted) is left as the pod made it,
// as kubelet leaves a ready one.
func (m *Manager) setUpEmptyDir(pod *v1.Pod, name string, src *v1.EmptyDirVolumeSource) (string, error) {
	dir := m.VolumeDir(pod.UID, PluginEmptyDir, name)
	marker := m.readyMarker(pod.UID, PluginEmptyDir, name)
	_, err := os.Lstat(marker)
	fresh := errors.Is(err, os.ErrNotExist)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	switch {
	case src.Medium == v1.StorageMediumDefault:
	case src.Medium == v1.StorageMediumMemory:
		mounted, err := m.ensureTmpfs(dir, EmptyDirSize(pod, src, m.cfg.NodeAllocatable.Memory().Value()))
		if err != nil {
			return "", err
		}
		fresh = fresh || mounted
	case isHugePagesMedium(src.Medium):
		mounted, err := m.ensureHugetlbfs(pod, dir, src.Medium)
		if err != nil {
			return "", err
		}
		fresh = fresh || mounted
	default:
		return "", fmt.Errorf("%w: emptyDir medium %q", ErrUnsupported, src.Medium)
	}
	if !fresh {
		return dir, nil
	}
	if err := os.Chmod(dir, EmptyDirMode(src.Medium)); err != nil {
		return "", err
	}
	if g := fsGroup(pod); g != nil {
		if err := SetOwnership(dir, *g, false, pod.Spec.SecurityContext.FSGroupChangePolicy); err != nil {
			return "", err
		}
	}
	if err := markReady(marker); err != nil {
		return "", err
	}
	return dir, nil
}

// readyMarker is the file that says volume name of plugin was set up
// completely once: <pods dir>/<uid>/plugins/<plugin>/<name>/ready, beside
// the volume rather than in it (the pod owns the volume's content).
func (m *Manager) readyMarker(uid types.UID, plugin, name string) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), "plugins", plugin, name, "ready")
}

// markReady writes the ready marker.
func markReady(marker string) error {
	if err := os.MkdirAll(filepath.Dir(marker), 0o750); err != nil {
		return fmt.Errorf("volume ready marker: %w", err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("volume ready marker: %w", err)
	}
	return nil
}

// ensureTmpfs mounts a tmpfs on dir unless one is there; mounted says it
// did.
func (m *Manager) ensureTmpfs(dir string, size int64) (mounted bool, err error) {
	there, err := m.mnt.IsMountPoint(dir)
	if err != nil || there {
		return false, err
	}
	return true, m.mnt.MountTmpfs(dir, size)
}

// FsUser is the user every container of pod runs as when they all set
// the same runAsUser (their own or the pod's), else nil.
func FsUser(pod *v1.Pod) *int64 {
	var user *int64
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			var u *int64
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				u = c.SecurityContext.RunAsUser
			} else if pod.Spec.SecurityContext != nil {
				u = pod.Spec.SecurityContext.RunAsUser
			}
			if u == nil || (user != nil && *user != *u) {
				return nil
			}
			user = u
		}
	}
	return user
}

func fsGroup(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// CheckHostPath checks what is at path against the hostPath type, with
// kubelet's messages, creating it for DirectoryOrCreate (0755) and
// FileOrCreate (0644, the parent must exist).
func CheckHostPath(path string, typ *v1.HostPathType) error {
	t := v1.HostPathUnset
	if typ != nil {
		t = *typ
	}
	fail := func(what string) error { return fmt.Errorf("hostPath type check failed: %s is not a %s", path, what) }
	info, err := os.Stat(path)
	exists := err == nil
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("hostPath %s: %w", path, err)
			}
			return os.Chmod(path, 0o755)
		}
		if !info.IsDir() {
			return fail("directory")
		}
	case v1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("hostPath %s: %w", path, err)
			}
			return f.Close()
		}
		if !info.Mode().IsRegular() {
			return fail("file")
		}
	case v1.HostPathDirectory:
		if !exists || !info.IsDir() {
			return fail("directory")
		}
	case v1.HostPathFile:
		if !exists || !info.Mode().IsRegular() {
			return fail("file")
		}
	case v1.HostPathSocket:
		if !exists || info.Mode()&fs.ModeSocket == 0 {
			return fail("socket file")
		}
	case v1.HostPathCharDev:
		if !exists || info.Mode()&fs.ModeCharDevice == 0 {
			return fail("character device")
		}
	case v1.HostPathBlockDev:
		if !exists || info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0 {
			return fail("block device")
		}
	default:
		return fmt.Errorf("hostPath %s: unknown type %q", path, t)
	}
	return nil
}

// writeVolume makes the volume directory (on a tmpfs when memory) and
// writes payload into it atomically.
func (m *Manager) writeVolume(pod *v1.Pod, plugin, name string, memory bool, payload map[string]FileProjection) (string, error) {
	dir := m.VolumeDir(pod.UID, plugin, name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if memory {
		if _, err := m.ensureTmpfs(dir, 0); err != nil {
			return "", err
		}
	}
	mode := os.ModeDir | 0o755
	g := fsGroup(pod)
	var setPerms func() error
	if g != nil {
		// kubelet's ownership of a read-only volume, applied to the whole
		// volume before a new version of the files is swapped in.
		mode, _ = OwnershipMode(mode, true)
		if err := os.Lchown(dir, -1, int(*g)); err != nil {
			return "", fmt.Errorf("fsGroup: %w", err)
		}
		setPerms = func() error { return SetOwnership(dir, *g, true, nil) }
	}
	if err := os.Chmod(dir, mode); err != nil {
		return "", err
	}
	if err := writeAtomic(dir, WithFSGroup(payload, g), m.now(), setPerms); err != nil {
		return "", err
	}
	return dir, nil
}

func (m *Manager) objects() (Objects, error) {
	if m.cfg.Objects == nil {
		return nil, ErrNoAPIServer
	}
	return m.cfg.Objects, nil
}

func optional(b *bool) bool { return b != nil && *b }

// configMap gets a configMap; a missing optional one is nil.
func (m *Manager) configMap(ctx context.Context, ns, name string, opt bool) (*v1.ConfigMap, error) {
	return getObject(m, "configmap", name, opt, func(o Objects) (*v1.ConfigMap, error) { return o.ConfigMap(ctx, ns, name) })
}

// secret gets a secret; a missing optional one is nil.
func (m *Manager) secret(ctx context.Context, ns, name string, opt bool) (*v1.Secret, error) {
	return getObject(m, "secret", name, opt, func(o Objects) (*v1.Secret, error) { return o.Secret(ctx, ns, name) })
}

// getObject gets the object name of kind through get from m's objects; a
// missing optional one (opt) is nil.
func getObject[T any](m *Manager, kind, name string, opt bool, get func(Objects) (*T, error)) (*T, error) {
	o, err := m.objects()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", kind, name, err)
	}
	obj, err := get(o)
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	return obj, err
}

func (m *Manager) setUpConfigMap(ctx context.Context, pod *v1.Pod, name string, src *v1.ConfigMapVolumeSource) (string, error) {
	cm, err := m.configMap(ctx, pod.Namespace, src.Name, optional(src.Optional))
	if err != nil {
		return "", err
	}
	payload, err := ConfigMapPayload(cm, src.Items, defaultMode(src.DefaultMode), optional(src.Optional))
	if err != nil {
		return "", err
	}
	return m.writeVolume(pod, PluginConfigMap, name, false, payload)
}

func (m *Manager) setUpSecret(ctx context.Context, pod *v1.Pod, name string, src *v1.SecretVolumeSource) (string, error) {
	s, err := m.secret(ctx, pod.Namespace, src.SecretName, optional(src.Optional))
	if err != nil {
		return "", err
	}
	payload, err := SecretPayload(s, src.Items, defaultMode(src.DefaultMode), optional(src.Optional))
	if err != nil {
		return "", err
	}
	return m.writeVolume(pod, PluginSecret, name, true, payload)
}

func (m *Manager) setUpDownwardAPI(pod *v1.Pod, name string, src *v1.DownwardAPIVolumeSource) (string, error) {
	payload, err := DownwardAPIPayload(pod, src.Items, defaultMode(src.DefaultMode), m.nodeAllocatable())
	if err != nil {
		return "", err
	}
	return m.writeVolume(pod, PluginDownwardAPI, name, true, payload)
}

func (m *Manager) setUpProjected(ctx context.Context, pod *v1.Pod, name string, src *v1.ProjectedVolumeSource) (string, error) {
	def := defaultMode(src.DefaultMode)
	payload := map[string]FileProjection{}
	for i := range src.Sources {
		files, err := m.projection(ctx, pod, &src.Sources[i], def)
		if err != nil {
			return "", err
		}
		if err := merge(payload, files); err != nil {
			return "", err
		}
	}
	return m.writeVolume(pod, PluginProjected, name, true, payload)
}

// projection is the files of one source of a projected volume.
func (m *Manager) projection(ctx context.Context, pod *v1.Pod, p *v1.VolumeProjection, def os.FileMode) (map[string]FileProjection, error) {
	switch {
	case p.ConfigMap != nil:
		cm, err := m.configMap(ctx, pod.Namespace, p.ConfigMap.Name, optional(p.ConfigMap.Optional))
		if err != nil {
			return nil, err
		}
		return ConfigMapPayload(cm, p.ConfigMap.Items, def, optional(p.ConfigMap.Optional))
	case p.Secret != nil:
		s, err := m.secret(ctx, pod.Namespace, p.Secret.Name, optional(p.Secret.Optional))
		if err != nil {
			return nil, err
		}
		return SecretPayload(s, p.Secret.Items, def, optional(p.Secret.Optional))
	case p.DownwardAPI != nil:
		return DownwardAPIPayload(pod, p.DownwardAPI.Items, def, m.nodeAllocatable())
	case p.ServiceAccountToken != nil:
		if m.cfg.Tokens == nil {
			return nil, fmt.Errorf("service account token: %w", ErrNoAPIServer)
		}
		t := p.ServiceAccountToken
		exp := int64(3600)
		if t.ExpirationSeconds != nil {
			exp = *t.ExpirationSeconds
		}
		tok, err := m.cfg.Tokens.Token(ctx, pod, t.Audience, exp)
		if err != nil {
			return nil, fmt.Errorf("service account token: %w", err)
		}
		f := file([]byte(tok), def)
		if u := FsUser(pod); u != nil || fsGroup(pod) != nil {
			// kubelet's: a token readable only by the pod's user (and its
			// fsGroup).
			f.Mode = 0o600
			if u != nil {
				f.UID = *u
			}
		}
		return map[string]FileProjection{t.Path: f}, nil
	case p.ClusterTrustBundle != nil:
		return nil, fmt.Errorf("%w: clusterTrustBundle projections", ErrUnsupported)
	case p.PodCertificate != nil:
		return nil, fmt.Errorf("%w: podCertificate projections", ErrUnsupported)
	}
	return nil, fmt.Errorf("%w: empty projection", ErrUnsupported)
}

func (m *Manager) nodeAllocatable() v1.ResourceList { return m.cfg.NodeAllocatable }
