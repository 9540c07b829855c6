package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
)

// IDSpace says which hierarchy a cgroup id belongs to. A cgroup's id is the
// inode number of its directory in that hierarchy.
type IDSpace int

const (
	// UnifiedID is the id of a cgroup in the cgroup2 hierarchy: what
	// bpf_get_current_cgroup_id and task->cgroups->dfl_cgrp->kn->id give,
	// also on hybrid hosts.
	UnifiedID IDSpace = iota + 1
	// MemcgID is the id of a cgroup in the hierarchy of the memory
	// controller: the v1 memory hierarchy on hybrid and v1 hosts (what the
	// OOM tracepoints' memcg gives), the cgroup2 hierarchy on v2 hosts.
	MemcgID
)

func (s IDSpace) String() string {
	switch s {
	case UnifiedID:
		return "unified"
	case MemcgID:
		return "memcg"
	}
	return fmt.Sprintf("IDSpace(%d)", int(s))
}

// errNoInodes is returned where file systems do not give inode numbers.
var errNoInodes = errors.New("cgroup ids: inode numbers not available on this system")

// idCache maps ids to cgroup paths, per space. It is filled by walking a
// whole hierarchy on a miss, so one walk serves the lookups that follow.
type idCache struct {
	mu   sync.Mutex
	byID map[IDSpace]map[uint64]string
}

func (c *idCache) init() { c.byID = map[IDSpace]map[uint64]string{} }

// idMount returns the hierarchy of space.
func (r *Reader) idMount(space IDSpace) (*Mount, error) {
	var m *Mount
	switch space {
	case UnifiedID:
		m = r.h.Unified
	case MemcgID:
		m = r.memory.m
	default:
		return nil, fmt.Errorf("cgroup ids: unknown id space %d", int(space))
	}
	if m == nil {
		return nil, fmt.Errorf("cgroup ids: no %s hierarchy: %w", space, ErrNoCgroups)
	}
	return m, nil
}

// ID returns the id of cgroup in space: the inode number of its directory.
func (r *Reader) ID(space IDSpace, cgroup string) (uint64, error) {
	m, err := r.idMount(space)
	if err != nil {
		return 0, err
	}
	cg := cleanCgroup(cgroup)
	dir, ok := m.Dir(cg)
	if !ok {
		return 0, fmt.Errorf("cgroup %s: outside the mounted sub-tree %s: %w", cg, m.Root, ErrCgroupNotFound)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", cg, err)
	}
	ino, ok := inodeOf(fi)
	if !ok {
		return 0, errNoInodes
	}
	return ino, nil
}

// Resolve returns the path of the cgroup with id in space. Known ids are
// answered from a cache (checked against the directory's inode number, so a
// removed cgroup is noticed); an unknown id walks the hierarchy once and
// caches every cgroup it sees. The error wraps ErrCgroupNotFound when no
// cgroup has the id.
func (r *Reader) Resolve(ctx context.Context, space IDSpace, id uint64) (string, error) {
	m, err := r.idMount(space)
	if err != nil {
		return "", err
	}
	c := &r.ids
	c.mu.Lock()
	defer c.mu.Unlock()
	if cg, ok := c.byID[space][id]; ok {
		if got, err := r.ID(space, cg); err == nil && got == id {
			return cg, nil
		}
		delete(c.byID[space], id)
	}
	ids, err := walkIDs(ctx, m)
	if err != nil {
		return "", fmt.Errorf("cgroup id %d (%s): %w", id, space, err)
	}
	c.byID[space] = ids
	if cg, ok := ids[id]; ok {
		return cg, nil
	}
	return "", fmt.Errorf("cgroup id %d (%s): %w", id, space, ErrCgroupNotFound)
}

// walkIDs maps the id of every cgroup of mount m to its path.
func walkIDs(ctx context.Context, m *Mount) (map[uint64]string, error) {
	ids := map[uint64]string{}
	rootCg := cleanCgroup(m.Root)
	fi, err := os.Stat(m.Path)
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", m.Path, err)
	}
	ino, ok := inodeOf(fi)
	if !ok {
		return nil, errNoInodes
	}
	ids[ino] = rootCg
	type dir struct{ fs, cg string }
	queue := []dir{{m.Path, rootCg}}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(d.fs)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed while walking
			}
			return nil, fmt.Errorf("walk %s: %w", d.fs, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed while walking
			}
			ino, ok := inodeOf(fi)
			if !ok {
				return nil, errNoInodes
			}
			child := dir{fs: d.fs + "/" + e.Name(), cg: path.Join(d.cg, e.Name())}
			ids[ino] = child.cg
			queue = append(queue, child)
		}
	}
	return ids, nil
}
