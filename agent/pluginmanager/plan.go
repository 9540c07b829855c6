package pluginmanager

import (
	"sort"
	"time"
)

// Plan decides what to do: the registered plugins whose socket is gone or
// was re-created (another generation) are unregistered, and the desired
// sockets without a plugin registered for their generation are registered.
// Both lists are sorted by socket path.
func Plan(desired map[string]uint64, registered map[string]Plugin) (unregister []Plugin, register []string) {
	for path, p := range registered {
		if gen, ok := desired[path]; !ok || gen != p.Generation {
			unregister = append(unregister, p)
		}
	}
	for path, gen := range desired {
		if p, ok := registered[path]; !ok || p.Generation != gen {
			register = append(register, path)
		}
	}
	sort.Slice(unregister, func(i, j int) bool { return unregister[i].SocketPath < unregister[j].SocketPath })
	sort.Strings(register)
	return unregister, register
}

// nextBackoff doubles a retry delay from initialBackoff up to maxBackoff.
func nextBackoff(last time.Duration) time.Duration {
	if last <= 0 {
		return initialBackoff
	}
	if next := 2 * last; next < maxBackoff {
		return next
	}
	return maxBackoff
}
