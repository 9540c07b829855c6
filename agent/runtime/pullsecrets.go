package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/kernelet/kernelet/internal/imageref"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// EventFailedToRetrieveImagePullSecret is the warning about image pull
// secrets that could not be read.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// dockerEntry is one registry's credential in a docker config.
type dockerEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// dockerConfig is the registry → credential map of a pull secret: the
// "auths" of .dockerconfigjson or the whole of .dockercfg.
func dockerConfig(s *v1.Secret) (map[string]dockerEntry, error) {
	if b, ok := s.Data[v1.DockerConfigJsonKey]; ok {
		var cfg struct {
			Auths map[string]dockerEntry `json:"auths"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("secret %s: %s: %w", s.Name, v1.DockerConfigJsonKey, err)
		}
		return cfg.Auths, nil
	}
	if b, ok := s.Data[v1.DockerConfigKey]; ok {
		var cfg map[string]dockerEntry
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("secret %s: %s: %w", s.Name, v1.DockerConfigKey, err)
		}
		return cfg, nil
	}
	return nil, nil
}

// registryKey parses a docker config key ("host", "https://host/v1/",
// "host/path") into a host (possibly with * globs) and a path prefix.
func registryKey(key string) (host, prefix string) {
	k := key
	if i := strings.Index(k, "://"); i >= 0 {
		k = k[i+3:]
	}
	host, prefix, _ = strings.Cut(k, "/")
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "v1" || prefix == "v2" {
		prefix = ""
	}
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		host = "docker.io"
	}
	return host, prefix
}

// keyMatches tells whether a docker config key applies to the image.
func keyMatches(key, imgHost, imgRepo string) bool {
	host, prefix := registryKey(key)
	if ok, _ := path.Match(host, imgHost); !ok && host != imgHost {
		return false
	}
	return prefix == "" || imgRepo == prefix || strings.HasPrefix(imgRepo, prefix+"/")
}

// PullCredentials are the credentials of the pull secrets that apply to
// image, most specific key first (longer keys before shorter ones, then
// in secret order); none means an anonymous pull.
func PullCredentials(image string, secrets []*v1.Secret) ([]*runtimeapi.AuthConfig, error) {
	imgHost, imgRepo := imageref.Repository(image)
	type match struct {
		key  string
		auth *runtimeapi.AuthConfig
	}
	var found []match
	for _, s := range secrets {
		cfg, err := dockerConfig(s)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !keyMatches(k, imgHost, imgRepo) {
				continue
			}
			e := cfg[k]
			a := &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password, Auth: e.Auth,
				ServerAddress: imgHost, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
			if a.Username == "" && e.Auth != "" {
				if dec, err := base64.StdEncoding.DecodeString(e.Auth); err == nil {
					a.Username, a.Password, _ = strings.Cut(string(dec), ":")
				}
			}
			found = append(found, match{key: k, auth: a})
		}
	}
	slices.SortStableFunc(found, func(a, b match) int { return len(b.key) - len(a.key) })
	out := make([]*runtimeapi.AuthConfig, len(found))
	for i, f := range found {
		out[i] = f.auth
	}
	return out, nil
}

// pullSecrets reads the pod's image pull secrets; those that cannot be
// read are named in a FailedToRetrieveImagePullSecret warning (kubelet's
// message) and skipped.
func (m *Manager) pullSecrets(ctx context.Context, pod *v1.Pod, r *SyncResult) []*v1.Secret {
	if len(pod.Spec.ImagePullSecrets) == 0 || m.objs == nil {
		return nil
	}
	var out []*v1.Secret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		s, err := m.objs.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			missing = append(missing, ref.Name)
			continue
		}
		out = append(out, s)
	}
	if len(missing) > 0 {
		r.warn(EventFailedToRetrieveImagePullSecret, fmt.Sprintf(
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
	}
	return out
}
