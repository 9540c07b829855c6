package memorymanager

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Node is one NUMA node's memory: bytes of each memory resource ("memory",
// "hugepages-<size>").
type Node struct {
	ID    int
	Total map[v1.ResourceName]uint64
}

// ReadNodes reads the NUMA nodes' memory from sysfs (fsys rooted at /sys):
// MemTotal of each node's meminfo and its hugepages (nr_hugepages × size).
func ReadNodes(fsys fs.FS) ([]Node, error) {
	dirs, _ := fs.Glob(fsys, "devices/system/node/node[0-9]*")
	var out []Node
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(path.Base(dir), "node"))
		if err != nil {
			continue
		}
		n := Node{ID: id, Total: map[v1.ResourceName]uint64{}}
		b, err := fs.ReadFile(fsys, dir+"/meminfo")
		if err != nil {
			return nil, fmt.Errorf("numa node %d: %w", id, err)
		}
		if n.Total[v1.ResourceMemory], err = memTotal(b); err != nil {
			return nil, fmt.Errorf("numa node %d meminfo: %w", id, err)
		}
		pages, _ := fs.Glob(fsys, dir+"/hugepages/hugepages-*kB")
		for _, p := range pages {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(path.Base(p), "hugepages-"), "kB"), 10, 64)
			if err != nil {
				continue
			}
			count, err := fs.ReadFile(fsys, p+"/nr_hugepages")
			if err != nil {
				return nil, fmt.Errorf("numa node %d hugepages: %w", id, err)
			}
			nr, err := strconv.ParseUint(strings.TrimSpace(string(count)), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("numa node %d hugepages: %w", id, err)
			}
			size := resource.NewQuantity(int64(kb)*1024, resource.BinarySI)
			n.Total[v1.ResourceName(v1.ResourceHugePagesPrefix+size.String())] = nr * kb * 1024
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no NUMA nodes under %s", "devices/system/node")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// memTotal is the MemTotal line of a node's meminfo, in bytes.
func memTotal(b []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // Node 0 MemTotal: 22898464 kB
		if len(f) >= 4 && f[2] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[3], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no MemTotal")
}
