package cgroups

import (
	"fmt"
	"path"
	"strings"
)

// The layout of the node's pod cgroups — where kubepods, the QoS cgroups,
// each pod's and each container's cgroup are — for the two cgroup drivers
// kubelet knows, as pure functions of plain values:
//
//	cgroupfs: /kubepods, /kubepods/burstable, /kubepods/besteffort,
//	          /kubepods/burstable/pod<uid>, /kubepods/pod<uid> (Guaranteed),
//	          <pod cgroup>/<container id> (containerd's cgroupfs parent/id)
//	systemd:  /kubepods.slice, /kubepods.slice/kubepods-burstable.slice,
//	          …/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
//	          (the uid's "-" written "_"), /kubepods.slice/kubepods-pod<uid>.slice
//	          (Guaranteed), <pod slice>/cri-containerd-<id>.scope
//	          (containerd's "slice:cri-containerd:<id>" with SystemdCgroup)
//
// The systemd names are kubelet's (ConvertCgroupNameToSystemd): the
// cgroupfs name's components, "-" escaped as "_", joined by "-" with
// ".slice", expanded into the slice's cgroupfs path. ParsePodCgroup reads
// either layout back.

// Driver is kubelet's cgroupDriver: how pod cgroups are made and named.
type Driver string

// The cgroup drivers. The zero value is DriverCgroupfs.
const (
	// DriverCgroupfs: directories written directly in the cgroup
	// filesystems.
	DriverCgroupfs Driver = "cgroupfs"
	// DriverSystemd: systemd slices created and updated through systemd's
	// D-Bus API.
	DriverSystemd Driver = "systemd"
)

// systemd's suffixes of the unit types the layout uses.
const (
	sliceSuffix = ".slice"
	scopeSuffix = ".scope"
	// containerdScopePrefix is what containerd's CRI plugin names a
	// container's scope under the systemd driver: cri-containerd-<id>.scope.
	containerdScopePrefix = "cri-containerd-"
)

// Layout names the pod cgroups of one driver under one cgroup root. The
// zero value is the cgroupfs driver under "/".
type Layout struct {
	driver Driver
	// root is cgroupRoot's components ("/" has none).
	root []string
}

// NewLayout returns the layout of driver under cgroupRoot (kubelet's
// cgroupRoot, in cgroupfs form: "/" or "/a/b"; "" is "/"). Under the
// systemd driver each component of the root becomes part of the slice
// names, so it must not contain "_" (kubelet's rule: "_" is how "-" is
// escaped) nor "." (a unit name suffix).
func NewLayout(driver Driver, cgroupRoot string) (Layout, error) {
	switch driver {
	case "", DriverCgroupfs:
		driver = DriverCgroupfs
	case DriverSystemd:
	default:
		return Layout{}, fmt.Errorf("cgroup driver %q: want %q or %q", driver, DriverCgroupfs, DriverSystemd)
	}
	root, err := cleanRoot(cgroupRoot)
	if err != nil {
		return Layout{}, err
	}
	l := Layout{driver: driver}
	for _, c := range strings.Split(strings.TrimPrefix(root, "/"), "/") {
		if c == "" {
			continue
		}
		if driver == DriverSystemd && strings.ContainsAny(c, "_.") {
			return Layout{}, fmt.Errorf("cgroup root %q: with the systemd driver a component may not contain %q or %q (give the cgroupfs form, e.g. \"/\" for the root slice)", cgroupRoot, "_", ".")
		}
		l.root = append(l.root, c)
	}
	return l, nil
}

// Driver is the layout's driver.
func (l Layout) Driver() Driver {
	if l.driver == "" {
		return DriverCgroupfs
	}
	return l.driver
}

// Systemd tells whether the layout is the systemd driver's.
func (l Layout) Systemd() bool { return l.driver == DriverSystemd }

// Root is the cgroup the pod cgroups are made under, as a cgroupfs path:
// cgroupRoot itself for cgroupfs, its slice ("/a.slice/a-b.slice") for
// systemd; "/" for "/".
func (l Layout) Root() string { return l.name(nil) }

// Kubepods is the cgroup of all pods: /kubepods or /kubepods.slice under
// the root.
func (l Layout) Kubepods() string { return l.name([]string{KubepodsName}) }

// QoS is the cgroup of a QoS class: Kubepods for Guaranteed, its
// burstable or besteffort child for the others.
func (l Layout) QoS(class QOSClass) string { return l.name(qosName(class)) }

// Pod is the cgroup of a pod (pod<uid>) under its QoS cgroup, as a
// cgroupfs path; under the systemd driver it is also what the runtime is
// given as the sandbox's CgroupParent (kubelet passes the expanded slice
// path; containerd takes the slice from its last element).
func (l Layout) Pod(class QOSClass, uid string) string {
	return l.name(append(qosName(class), PodCgroupPrefix+uid))
}

// Container is the cgroup containerd's CRI plugin gives a container (or a
// sandbox) with id under the pod cgroup podCgroup: <pod>/<id> under
// cgroupfs, <pod>/cri-containerd-<id>.scope under systemd.
func (l Layout) Container(podCgroup, id string) string {
	if l.Systemd() {
		return path.Join(podCgroup, containerdScopePrefix+id+scopeSuffix)
	}
	return path.Join(podCgroup, id)
}

func qosName(class QOSClass) []string {
	switch class {
	case Burstable:
		return []string{KubepodsName, BurstableName}
	case BestEffort:
		return []string{KubepodsName, BestEffortName}
	default:
		return []string{KubepodsName}
	}
}

// name is the cgroupfs path of the cgroup named by the root's components
// then rel's.
func (l Layout) name(rel []string) string {
	parts := append(append([]string(nil), l.root...), rel...)
	if !l.Systemd() {
		return "/" + path.Join(parts...)
	}
	return SystemdSlicePath(parts)
}

// SystemdSlicePath is the cgroupfs path of the slice kubelet names for
// the cgroup name parts: each part's "-" escaped as "_", joined by "-",
// and each prefix made a parent slice — ["kubepods", "burstable",
// "pod1-2"] is /kubepods.slice/kubepods-burstable.slice/
// kubepods-burstable-pod1_2.slice. No parts is "/" (the root slice).
func SystemdSlicePath(parts []string) string {
	if len(parts) == 0 {
		return "/"
	}
	var b strings.Builder
	prefix := ""
	for i, p := range parts {
		p = strings.ReplaceAll(p, "-", "_")
		if i > 0 {
			prefix += "-"
		}
		prefix += p
		b.WriteString("/" + prefix + sliceSuffix)
	}
	return b.String()
}

// SliceUnit returns the unit name of a slice's cgroupfs path and of its
// parent slice ("-.slice" for the root's children): for
// /kubepods.slice/kubepods-burstable.slice, "kubepods-burstable.slice" and
// "kubepods.slice". ok is false when the leaf is not a slice.
func SliceUnit(cgroup string) (unit, parent string, ok bool) {
	cg := path.Clean("/" + cgroup)
	unit = path.Base(cg)
	if !strings.HasSuffix(unit, sliceSuffix) || unit == sliceSuffix {
		return "", "", false
	}
	parent = path.Base(path.Dir(cg))
	if parent == "/" {
		parent = "-.slice"
	}
	return unit, parent, true
}

// PodCgroupRef is what a cgroup path says about the pod it belongs to.
type PodCgroupRef struct {
	// PodUID is the pod's uid ("-" restored from the systemd driver's "_").
	PodUID string
	// PodCgroup is the pod cgroup's path (a prefix of the parsed path).
	PodCgroup string
	// Below is the directory right below the pod cgroup ("" for the pod
	// cgroup itself) and ContainerID the container (or sandbox) id it
	// names: the directory itself under cgroupfs, the id of a
	// "<prefix>-<id>.scope" under systemd (cri-containerd-, crio-, …).
	Below, ContainerID string
}

// ParsePodCgroup finds the pod cgroup in a cgroup path of either layout:
// a directory "pod<uid>" (cgroupfs) or a slice whose last "-"-separated
// part is "pod<uid>" (systemd: kubepods-burstable-pod<uid>.slice,
// kubepods-pod<uid>.slice). ok is false when no directory of the path is
// one.
func ParsePodCgroup(cgroup string) (ref PodCgroupRef, ok bool) {
	parts := strings.Split(path.Clean("/"+cgroup), "/")
	for i, p := range parts {
		uid, found := podUIDOfDir(p)
		if !found {
			continue
		}
		ref = PodCgroupRef{PodUID: uid, PodCgroup: strings.Join(parts[:i+1], "/")}
		if i+1 < len(parts) {
			ref.Below = parts[i+1]
			ref.ContainerID = ContainerIDOfDir(ref.Below)
		}
		return ref, true
	}
	return PodCgroupRef{}, false
}

// podUIDOfDir reads the pod uid from one directory name of either layout.
func podUIDOfDir(dir string) (string, bool) {
	if name, isSlice := strings.CutSuffix(dir, sliceSuffix); isSlice {
		last := name[strings.LastIndex(name, "-")+1:]
		uid, found := strings.CutPrefix(last, PodCgroupPrefix)
		if !found || uid == "" {
			return "", false
		}
		return strings.ReplaceAll(uid, "_", "-"), true
	}
	uid, found := strings.CutPrefix(dir, PodCgroupPrefix)
	if !found || uid == "" || strings.Contains(uid, ".") { // not a unit (podman-….scope)
		return "", false
	}
	return uid, true
}

// ContainerIDOfDir is the container id a container cgroup's directory
// names: "<prefix>-<id>.scope" (a runtime's systemd scope) gives id;
// any other name is the id itself (cgroupfs).
func ContainerIDOfDir(dir string) string {
	if name, isScope := strings.CutSuffix(dir, scopeSuffix); isScope {
		return name[strings.LastIndex(name, "-")+1:]
	}
	return dir
}
