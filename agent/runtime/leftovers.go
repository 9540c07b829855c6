package runtime

import (
	"errors"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Leftovers lists the pods whose directory under the pods dir or whose log
// directory (<namespace>_<name>_<uid>) under the pod logs dir remains
// although keep does not want them: what a kill leaves behind when the
// agent dies in the middle of it, after the runtime's objects went. Each
// is a bare status (UID; name and namespace when a log directory names
// them): KillPod on it removes the rest — cgroup, volumes, log and pod
// directories.
func (m *Manager) Leftovers(keep func(types.UID) bool) ([]*PodStatus, error) {
	found := map[types.UID]*PodStatus{}
	var errs []error
	entries, err := os.ReadDir(m.pods)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		if uid := types.UID(e.Name()); e.IsDir() && !keep(uid) {
			found[uid] = &PodStatus{UID: uid}
		}
	}
	entries, err = os.ReadDir(m.logs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		// Namespaces and pod names have no "_": three parts or not ours.
		parts := strings.Split(e.Name(), "_")
		if !e.IsDir() || len(parts) != 3 || parts[2] == "" {
			continue
		}
		if uid := types.UID(parts[2]); !keep(uid) {
			found[uid] = &PodStatus{UID: uid, Namespace: parts[0], Name: parts[1]}
		}
	}
	out := make([]*PodStatus, 0, len(found))
	for _, st := range found {
		out = append(out, st)
	}
	return out, errors.Join(errs...)
}
