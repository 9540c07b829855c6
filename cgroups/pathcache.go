package cgroups

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// CgroupChange is the creation or removal of a cgroup, as a tracer of
// cgroup mkdir/rmdir (bpf.CgroupTracer, adapted by the caller) reports it.
type CgroupChange struct {
	Space IDSpace
	ID    uint64
	// Path is the cgroup's path in its hierarchy ("/a/b").
	Path    string
	Removed bool
}

// PathCache maps cgroup ids to paths in both id spaces. It answers from
// what Apply told it (mkdir/rmdir events) and falls back to the Reader's
// Resolve (a walk of the hierarchy) on a miss. It is safe for concurrent
// use.
type PathCache struct {
	r    *Reader
	mu   sync.RWMutex
	byID map[IDSpace]map[uint64]string
}

// NewPathCache returns an empty cache over r.
func NewPathCache(r *Reader) *PathCache {
	return &PathCache{r: r, byID: map[IDSpace]map[uint64]string{UnifiedID: {}, MemcgID: {}}}
}

// Apply records a change.
func (c *PathCache) Apply(ch CgroupChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byID[ch.Space]
	if m == nil {
		m = map[uint64]string{}
		c.byID[ch.Space] = m
	}
	if ch.Removed {
		delete(m, ch.ID)
		return
	}
	m[ch.ID] = ch.Path
}

// Follow applies the changes from ch until it is closed or ctx ends.
func (c *PathCache) Follow(ctx context.Context, ch <-chan CgroupChange) {
	for e, ok := recv(ctx, ch); ok; e, ok = recv(ctx, ch) {
		c.Apply(e)
	}
}

// recv receives from ch: false once ch is closed or ctx has ended.
func recv[T any](ctx context.Context, ch <-chan T) (T, bool) {
	select {
	case <-ctx.Done():
		var zero T
		return zero, false
	case v, ok := <-ch:
		return v, ok
	}
}

// Path returns the path of the cgroup with id in space.
func (c *PathCache) Path(ctx context.Context, space IDSpace, id uint64) (string, error) {
	c.mu.RLock()
	p, ok := c.byID[space][id]
	c.mu.RUnlock()
	if ok {
		return p, nil
	}
	if c.r == nil {
		return "", fmt.Errorf("cgroup id %d (%s): %w", id, space, ErrCgroupNotFound)
	}
	p, err := c.r.Resolve(ctx, space, id)
	if err != nil {
		return "", err
	}
	c.Apply(CgroupChange{Space: space, ID: id, Path: p})
	return p, nil
}

// ID returns the id of the cgroup at path in space (a stat of its
// directory; the answer is cached).
func (c *PathCache) ID(space IDSpace, path string) (uint64, error) {
	if c.r == nil {
		return 0, fmt.Errorf("cgroup %s: no reader: %w", path, ErrCgroupNotFound)
	}
	id, err := c.r.ID(space, path)
	if err != nil {
		return 0, err
	}
	c.Apply(CgroupChange{Space: space, ID: id, Path: cleanCgroup(path)})
	return id, nil
}

// HierarchyIDs reads /proc/cgroups: the v1 hierarchy id of each enabled
// controller (0 for controllers on the unified hierarchy).
func HierarchyIDs() (map[string]int, error) {
	f, err := os.Open("/proc/cgroups")
	if err != nil {
		return nil, fmt.Errorf("hierarchy ids: %w", err)
	}
	defer f.Close()
	return parseProcCgroups(bufio.NewScanner(f))
}

func parseProcCgroups(sc *bufio.Scanner) (map[string]int, error) {
	ids := map[string]int{}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "1" {
			continue
		}
		id, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("/proc/cgroups: %q: %w", line, err)
		}
		ids[f[0]] = id
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/cgroups: %w", err)
	}
	return ids, nil
}
