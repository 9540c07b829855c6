package cgroups_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kernelet/kernelet/cgroups"
)

// Map the cgroup v2 id an eBPF event carries to the cgroup's path. The
// cache is fed by cgroup mkdir/rmdir events (a bpf.CgroupTracer adapted
// by the caller) and walks the hierarchy on a miss.
func ExamplePathCache() {
	h, err := cgroups.Discover()
	if err != nil {
		log.Fatal(err)
	}
	r, err := cgroups.NewReader(h)
	if err != nil {
		log.Fatal(err)
	}
	paths := cgroups.NewPathCache(r)
	paths.Apply(cgroups.CgroupChange{Space: cgroups.UnifiedID, ID: 4242, Path: "/kubepods/pod1"}) // from a mkdir event
	p, err := paths.Path(context.Background(), cgroups.UnifiedID, 4242)
	fmt.Println(p, err)
	// Output: /kubepods/pod1 <nil>
}
