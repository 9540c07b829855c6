package podconfig

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// RuntimeFeatures are what kernelet knows of the container runtime that
// some pod fields need and CRI does not report as a feature: its name and
// version (CRI Version).
type RuntimeFeatures struct {
	Name    string
	Version string
}

// Containerd versions that mount images (CRI Mount.image, image volumes)
// and image sub paths (Mount.image_sub_path): containerd's own e2e gates,
// which kubelet's node e2e tests use too.
var (
	containerdImageVolumes  = [2]int{2, 1}
	containerdImageSubPaths = [2]int{2, 2}
)

// imageMounts tells whether the runtime mounts image volumes and image sub
// paths. Only containerd is known by version; any other runtime is given
// the mount and answers for itself.
func (f RuntimeFeatures) imageMounts() (volumes, subPaths bool) {
	if f.Name != "containerd" {
		return true, true
	}
	mm, ok := majorMinor(f.Version)
	if !ok {
		return true, true
	}
	return !less(mm, containerdImageVolumes), !less(mm, containerdImageSubPaths)
}

// majorMinor parses "v2.4.2", "1.6.20~ds1" and the like.
func majorMinor(v string) ([2]int, bool) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{major, minor}, true
}

func less(a, b [2]int) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// HasImageVolumes tells whether pod has a volumes[].image.
func HasImageVolumes(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			return true
		}
	}
	return false
}

// ValidateRuntimeFeatures lists the fields of pod that the runtime f
// cannot run, as an *UnsupportedError, or returns nil: image volumes on a
// containerd older than 2.1, image volume subPaths on one older than 2.2
// (containerd 1.6 would create the container without the image mounted).
func ValidateRuntimeFeatures(pod *v1.Pod, f RuntimeFeatures) error {
	volumes, subPaths := f.imageMounts()
	runtime := strings.TrimSpace(f.Name + " " + f.Version)
	var fields []UnsupportedField
	images := map[string]bool{}
	for i, v := range pod.Spec.Volumes {
		if v.Image == nil {
			continue
		}
		images[v.Name] = true
		if !volumes {
			fields = append(fields, UnsupportedField{Path: fmt.Sprintf("spec.volumes[%d].image", i),
				Reason: fmt.Sprintf("volume %q: image volumes are not supported by the runtime (%s; containerd mounts images from 2.1 on)", v.Name, runtime)})
		}
	}
	if volumes && !subPaths {
		all := append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...)
		for ci, c := range all {
			p := fmt.Sprintf("spec.containers[%d]", ci-len(pod.Spec.InitContainers))
			if ci < len(pod.Spec.InitContainers) {
				p = fmt.Sprintf("spec.initContainers[%d]", ci)
			}
			for mi, m := range c.VolumeMounts {
				if images[m.Name] && (m.SubPath != "" || m.SubPathExpr != "") {
					fields = append(fields, UnsupportedField{Path: fmt.Sprintf("%s.volumeMounts[%d]", p, mi),
						Reason: fmt.Sprintf("volume mount %q: a subPath of an image volume is not supported by the runtime (%s; containerd mounts image sub paths from 2.2 on)", m.Name, runtime)})
				}
			}
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return &UnsupportedError{Fields: fields}
}
