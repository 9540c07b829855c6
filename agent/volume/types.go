package volume

import (
	"context"
	"errors"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Plugin directory names under <pods dir>/<uid>/volumes, kubelet's.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginProjected   = "kubernetes.io~projected"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	// PluginCSI holds the CSI volumes, which agent/volumemanager sets up
	// and tears down: this package leaves that directory alone.
	PluginCSI = "kubernetes.io~csi"
	// PluginLocal holds the local PVs' bind mounts, agent/volumemanager's
	// too.
	PluginLocal = "kubernetes.io~local-volume"
)

// isExternal tells whether a pod volumes directory is agent/volumemanager's.
func isExternal(plugin string) bool { return plugin == PluginCSI || plugin == PluginLocal }

// DefaultMode is the mode of the files of configMap, secret, downwardAPI
// and projected volumes that set none (0644).
const DefaultMode os.FileMode = 0o644

// Objects gives the configMaps and secrets a pod references. Errors for
// missing objects match apierrors.IsNotFound.
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// PodObjects is an Objects that is told which pods reference which objects,
// so that it can watch exactly those (apiobjects.ObjectManager).
type PodObjects interface {
	Objects
	// RegisterPod starts following the objects pod references (volumes,
	// env, envFrom, image pull secrets); it replaces an earlier
	// registration of the same UID.
	RegisterPod(pod *v1.Pod)
	// UnregisterPod stops following what the pod referenced.
	UnregisterPod(uid types.UID)
}

// Tokens gives service account tokens for a pod's projected volumes.
type Tokens interface {
	// Token returns a token of the pod's service account for audience
	// (""= the API server's) valid for expirationSeconds, bound to the
	// pod; it may come from a cache and is refreshed before it expires.
	Token(ctx context.Context, pod *v1.Pod, audience string, expirationSeconds int64) (string, error)
	// Forget drops the pod's cached tokens.
	Forget(uid types.UID)
}

// ErrNoAPIServer is matched by the errors of volumes that need API objects
// when the agent runs standalone.
var ErrNoAPIServer = errors.New("no API server (standalone mode)")

// ErrUnsupported is matched by the errors of volume sources kernelet does
// not support.
var ErrUnsupported = errors.New("unsupported volume source")

// Config wires a Manager.
type Config struct {
	// PodsDir holds the per-pod directories (<root-dir>/pods).
	PodsDir string
	// Objects gives configMaps and secrets; nil: standalone.
	Objects Objects
	// Tokens gives service account tokens; nil: standalone.
	Tokens Tokens
	// NodeAllocatable bounds memory-backed emptyDirs (memory) and stands
	// in for the limits containers do not set in downward API volumes.
	NodeAllocatable v1.ResourceList
	// Mounter mounts and unmounts tmpfs; nil uses the system's.
	Mounter Mounter
}

// Mounter is the mount side effect, replaceable in tests.
type Mounter interface {
	// MountTmpfs mounts a tmpfs on dir (existing), of sizeBytes when > 0.
	MountTmpfs(dir string, sizeBytes int64) error
	// MountHugetlbfs mounts a hugetlbfs of pages of pageSize ("2Mi") on
	// dir (existing).
	MountHugetlbfs(dir, pageSize string) error
	// Unmount unmounts dir (lazily, when busy).
	Unmount(dir string) error
	// IsMountPoint tells whether dir is a mount point.
	IsMountPoint(dir string) (bool, error)
}
