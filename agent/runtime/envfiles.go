package runtime

import (
	"fmt"
	"os"
	"path/filepath"
)

// volumeFile reads files inside the pod's volumes (host directories by
// volume name) for env fileKeyRef: the path is resolved inside the volume
// (os.Root: no "..", no symlink leads out of it).
func volumeFile(volumes map[string]string) func(volume, path string) ([]byte, string, error) {
	return func(volume, path string) ([]byte, string, error) {
		dir, ok := volumes[volume]
		if !ok || dir == "" {
			return nil, "", fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", volume)
		}
		host := filepath.Join(dir, path)
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, host, fmt.Errorf("couldn't parse env file")
		}
		defer root.Close()
		b, err := root.ReadFile(filepath.Clean("/" + path)[1:])
		if err != nil {
			// kubelet's message: the parser could not open the file.
			return nil, host, fmt.Errorf("couldn't parse env file")
		}
		return b, host, nil
	}
}
