package podconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// EnvFileValue returns the value of key in an env file (env fileKeyRef,
// EnvFiles), with kubelet's strict grammar, a subset of POSIX shell:
// KEY='value' lines, the value always in single quotes, kept literally and
// possibly spanning lines; blank lines and lines starting with # are
// skipped, leading blanks ignored, a comment may follow the closing
// quote; a blank before '=' is an error, a blank after it assigns the
// empty string. The first assignment of key wins; "" (not found, or empty)
// counts as missing for the caller, as in kubelet.
func EnvFileValue(content []byte, key string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(content))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimLeft(sc.Text(), " \t")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, ok := strings.Cut(text, "=")
		switch {
		case !ok:
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", line)
		case strings.TrimRight(name, " \t") == "":
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", line)
		case strings.TrimRight(name, " \t") != name:
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", line)
		}
		if trimmed := strings.TrimLeft(value, " \t"); trimmed != value {
			if name == key {
				return "", nil // KEY= 'x' assigns the empty string, as a shell would
			}
			continue
		}
		if !strings.HasPrefix(value, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", line)
		}
		var b strings.Builder
		rest, start := value[1:], line
		for {
			end := strings.IndexByte(rest, '\'')
			if end >= 0 {
				b.WriteString(rest[:end])
				if after := strings.TrimLeft(rest[end+1:], " \t"); after != "" && !strings.HasPrefix(after, "#") {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", line)
				}
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			if !sc.Scan() {
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
			}
			line++
			rest = sc.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	return "", sc.Err()
}

// fileKeyRefValue is an env value from a file in one of the pod's volumes
// (kubelet's messages); ok is false when the key is missing and optional.
func fileKeyRefValue(name string, ref *fileKeyRef, opts ContainerOptions) (v string, ok bool, err error) {
	if opts.VolumeFile == nil {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.volume)
	}
	content, where, err := opts.VolumeFile(ref.volume, ref.path)
	if err != nil {
		return "", false, err
	}
	v, err = EnvFileValue(content, ref.key)
	if err != nil {
		return "", false, fmt.Errorf("couldn't parse env file")
	}
	if v == "" {
		if ref.optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.key, where)
	}
	return v, true, nil
}

type fileKeyRef struct {
	volume, path, key string
	optional          bool
}
