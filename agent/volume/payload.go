package volume

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/agent/runtime/podconfig"
	"github.com/kernelet/kernelet/internal/podutil"
)

// fileMode is the mode of an item: its own when set, else def.
func fileMode(item *int32, def os.FileMode) os.FileMode {
	if item != nil {
		return os.FileMode(*item) & os.ModePerm
	}
	return def
}

// defaultMode is a volume's defaultMode, DefaultMode when unset.
func defaultMode(m *int32) os.FileMode { return fileMode(m, DefaultMode) }

// WithFSGroup gives every file of payload to group fsGroup and makes it
// group-readable (kubelet's ownership of read-only volumes); nil changes
// nothing.
func WithFSGroup(payload map[string]FileProjection, fsGroup *int64) map[string]FileProjection {
	if fsGroup == nil {
		return payload
	}
	for p, f := range payload {
		f.GID = *fsGroup
		f.Mode |= 0o440
		payload[p] = f
	}
	return payload
}

// keyData is a configMap's or secret's data by key.
type keyData map[string][]byte

// project maps data to files: every key with mode def when items is empty,
// else each item's key to its path and mode. A missing key is an error
// unless optional (then skipped); missingMsg formats it.
func project(data keyData, items []v1.KeyToPath, def os.FileMode, optional bool, missingMsg string) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = file(v, def)
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf(missingMsg, it.Key)
		}
		out[it.Path] = file(v, fileMode(it.Mode, def))
	}
	return out, nil
}

// ConfigMapPayload is the files of configMap cm (data and binaryData) with
// items and modes; cm nil is a missing optional configMap (no files).
func ConfigMapPayload(cm *v1.ConfigMap, items []v1.KeyToPath, def os.FileMode, optional bool) (map[string]FileProjection, error) {
	if cm == nil {
		return map[string]FileProjection{}, nil
	}
	data := keyData{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return project(data, items, def, optional, "configmap references non-existent config key: %s")
}

// SecretPayload is the files of secret s with items and modes; s nil is a
// missing optional secret (no files).
func SecretPayload(s *v1.Secret, items []v1.KeyToPath, def os.FileMode, optional bool) (map[string]FileProjection, error) {
	if s == nil {
		return map[string]FileProjection{}, nil
	}
	return project(keyData(s.Data), items, def, optional, "references non-existent secret key: %s")
}

// fieldValue is the value of a downward API volume field of pod: the
// metadata fields podutil.FieldValue resolves without addresses.
func fieldValue(pod *v1.Pod, path string) (string, error) {
	v, ok := podutil.FieldValue(pod, path, nil)
	if !ok {
		return "", fmt.Errorf("%w: downward API field %q", ErrUnsupported, path)
	}
	return v, nil
}

// DownwardAPIPayload is the files of downward API items of pod;
// nodeAllocatable stands in for limits the containers do not set.
func DownwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def os.FileMode, nodeAllocatable v1.ResourceList) (map[string]FileProjection, error) {
	out := map[string]FileProjection{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = resourceValue(pod, it.ResourceFieldRef, nodeAllocatable)
		default:
			err = fmt.Errorf("item %q: neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		out[it.Path] = file([]byte(v), fileMode(it.Mode, def))
	}
	return out, nil
}

func resourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, nodeAllocatable v1.ResourceList) (string, error) {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == ref.ContainerName {
				return podconfig.ResourceFieldRefValue(pod, &list[i], ref, nodeAllocatable)
			}
		}
	}
	return "", fmt.Errorf("resourceFieldRef: container %q not found in the pod", ref.ContainerName)
}

// merge adds src's files to dst; a path given twice is an error.
func merge(dst, src map[string]FileProjection) error {
	for p, f := range src {
		if _, dup := dst[p]; dup {
			return fmt.Errorf("projected volume: path %q given twice", p)
		}
		dst[p] = f
	}
	return nil
}
