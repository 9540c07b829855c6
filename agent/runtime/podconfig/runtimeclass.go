package podconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// StandaloneRuntimeHandler is the one runtime handler a runtimeClassName
// may name without an API server to look RuntimeClasses up in (containerd's
// default runtime).
const StandaloneRuntimeHandler = "runc"

// RuntimeClassGetter returns a RuntimeClass by name (a lister's Get: a
// missing one is an apierrors NotFound error).
type RuntimeClassGetter func(name string) (*nodev1.RuntimeClass, error)

// RuntimeHandler is the CRI runtime handler of pod's sandbox: "" (the
// runtime's default) without spec.runtimeClassName, else the handler of
// that RuntimeClass as get finds it. A missing RuntimeClass is get's
// NotFound error as it is (kubelet's "runtimeclass.node.k8s.io "x" not
// found"); other errors say which RuntimeClass. With get nil (standalone)
// only StandaloneRuntimeHandler can be named.
func RuntimeHandler(pod *v1.Pod, get RuntimeClassGetter) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil
	}
	if get == nil {
		if *name == StandaloneRuntimeHandler {
			return *name, nil
		}
		return "", fmt.Errorf("RuntimeClass %q cannot be looked up without an API server (standalone: only %q)", *name, StandaloneRuntimeHandler)
	}
	rc, err := get(*name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", err
		}
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", *name, err)
	}
	return rc.Handler, nil
}
