package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/atomicfile"
)

// HealthStateFile is kubelet's checkpoint of the devices' health in the
// root dir: plain JSON (no checksum) written whenever a report changes
// it, read back at start so that the health reported before a crash
// holds until its timeout.
const HealthStateFile = "dra_health_state"

// savedDevice is a device's health in HealthStateFile (kubelet's
// state.DeviceHealth: the timeout in nanoseconds).
type savedDevice struct {
	PoolName           string
	DeviceName         string
	Health             v1.ResourceHealthStatus
	LastUpdated        time.Time
	HealthCheckTimeout time.Duration
	Message            string
}

// savedDriver is a driver's devices by "pool/device".
type savedDriver struct {
	Devices map[string]savedDevice
}

// encodeHealth is health (driver → pool/device → health) in kubelet's
// format.
func encodeHealth(health map[string]map[string]deviceHealth) ([]byte, error) {
	out := make(map[string]savedDriver, len(health))
	for driver, devs := range health {
		sd := savedDriver{Devices: make(map[string]savedDevice, len(devs))}
		for key, h := range devs {
			i := strings.LastIndex(key, "/") // pool names may hold slashes, device names not
			sd.Devices[key] = savedDevice{PoolName: key[:max(i, 0)], DeviceName: key[i+1:], Health: h.health,
				LastUpdated: h.updated, HealthCheckTimeout: h.timeout, Message: h.message}
		}
		out[driver] = sd
	}
	return json.Marshal(out)
}

// decodeHealth reads kubelet's format back (a timeout of 0 is kubelet's
// default).
func decodeHealth(b []byte) (map[string]map[string]deviceHealth, error) {
	var in map[string]savedDriver
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]deviceHealth, len(in))
	for driver, sd := range in {
		devs := make(map[string]deviceHealth, len(sd.Devices))
		for key, d := range sd.Devices {
			h := deviceHealth{health: d.Health, message: d.Message, updated: d.LastUpdated, timeout: d.HealthCheckTimeout}
			if h.timeout == 0 {
				h.timeout = DefaultHealthTimeout
			}
			devs[key] = h
		}
		out[driver] = devs
	}
	return out, nil
}

// loadHealth reads path (none: no health known).
func loadHealth(path string) (map[string]map[string]deviceHealth, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]map[string]deviceHealth{}, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := decodeHealth(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// saveHealthLocked writes the health checkpoint (healthMu held); a
// failure is returned for the log, as kubelet goes on without it.
func (m *Manager) saveHealthLocked() error {
	if m.healthFile == "" {
		return nil
	}
	b, err := encodeHealth(m.health)
	if err != nil {
		return err
	}
	return atomicfile.Write(m.healthFile, b, 0o600)
}
