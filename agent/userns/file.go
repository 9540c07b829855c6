package userns

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// writeFile writes uid's mappings file durably: a temporary file synced
// and renamed, then the directory synced (kubelet's guarantee: the range
// is on disk before any container uses it).
func (m *Manager) writeFile(uid types.UID, f fileMapping) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	dir := filepath.Join(m.cfg.PodsDir, string(uid))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+MappingsFile+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), m.path(uid))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", m.path(uid), werr)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
