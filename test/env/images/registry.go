package images

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Registry is an in-memory OCI distribution registry serving the pull
// path only: GET/HEAD /v2/, manifests by tag or digest, and blobs. The
// test containerd uses it as the mirror for TestRegistryHost.
type Registry struct {
	mu        sync.Mutex
	tags      map[string]map[string]string // repository → tag → manifest digest
	manifests map[string][]byte            // digest → manifest
	blobs     map[string][]byte            // digest → config or layer
	repoBlobs map[string]map[string]bool   // repository → digests it may serve
	served    map[string]int               // "GET <path>" → count
}

// NewRegistry returns a registry serving images.
func NewRegistry(images ...*Image) (*Registry, error) {
	r := &Registry{
		tags:      map[string]map[string]string{},
		manifests: map[string][]byte{},
		blobs:     map[string][]byte{},
		repoBlobs: map[string]map[string]bool{},
		served:    map[string]int{},
	}
	for _, img := range images {
		if err := r.Add(img); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add makes img pullable as img.Name (the registry host is ignored).
func (r *Registry) Add(img *Image) error {
	_, repo, tag, err := SplitName(img.Name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tags[repo] == nil {
		r.tags[repo] = map[string]string{}
		r.repoBlobs[repo] = map[string]bool{}
	}
	r.tags[repo][tag] = img.ManifestDigest
	r.manifests[img.ManifestDigest] = img.Manifest
	r.repoBlobs[repo][img.ManifestDigest] = true
	for d, b := range img.blobs {
		r.blobs[d] = b
		r.repoBlobs[repo][d] = true
	}
	return nil
}

// Served returns how many GET requests (not HEAD) the registry answered
// successfully for path, e.g. "/v2/testbox/manifests/v1" or
// "/v2/testbox/blobs/sha256:...".
func (r *Registry) Served(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served["GET "+path]
}

// ServedBlob returns how many times the blob with digest was downloaded
// (GET) from any repository.
func (r *Registry) ServedBlob(digest string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.served {
		if strings.HasPrefix(k, "GET /v2/") && strings.HasSuffix(k, "/blobs/"+digest) {
			n += v
		}
	}
	return n
}

type regError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func regWriteError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(struct {
		Errors []regError `json:"errors"`
	}{[]regError{{Code: code, Message: msg}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// ServeHTTP implements the pull side of the OCI distribution API.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		regWriteError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry only serves pulls")
		return
	}
	p := req.URL.Path
	if p == "/v2" || p == "/v2/" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		regWriteError(w, http.StatusNotFound, "NOT_FOUND", "not a /v2/ path")
		return
	}
	var repo, kind, ref string
	for _, k := range []string{"/manifests/", "/blobs/"} {
		if i := strings.LastIndex(rest, k); i > 0 {
			repo, kind, ref = rest[:i], strings.Trim(k, "/"), rest[i+len(k):]
			break
		}
	}
	if repo == "" || ref == "" {
		regWriteError(w, http.StatusNotFound, "NOT_FOUND", "unknown path")
		return
	}

	r.mu.Lock()
	var (
		content   []byte
		digest    string
		mediaType string
	)
	switch kind {
	case "manifests":
		digest = ref
		if !strings.HasPrefix(ref, "sha256:") {
			digest = r.tags[repo][ref]
		}
		if r.repoBlobs[repo][digest] {
			content = r.manifests[digest]
		}
		mediaType = MediaTypeOCIManifest
	case "blobs":
		digest = ref
		if r.repoBlobs[repo][digest] {
			content = r.blobs[digest]
		}
		mediaType = "application/octet-stream"
	}
	if content != nil && req.Method == http.MethodGet {
		r.served["GET "+p]++
	}
	r.mu.Unlock()

	if content == nil {
		code := "MANIFEST_UNKNOWN"
		if kind == "blobs" {
			code = "BLOB_UNKNOWN"
		}
		regWriteError(w, http.StatusNotFound, code, fmt.Sprintf("%s %s:%s not found", kind, repo, ref))
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	w.Header().Set("Etag", `"`+digest+`"`)
	// ServeContent answers HEAD and Range requests and sets Content-Length.
	http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(content))
}

// RegistryServer is a Registry listening on a local TCP address.
type RegistryServer struct {
	Registry *Registry
	ln       net.Listener
	srv      *http.Server
	done     chan error
}

// ServeRegistry serves reg on addr (e.g. "127.0.0.1:0" for a free port)
// until Close.
func ServeRegistry(addr string, reg *Registry) (*RegistryServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("registry listen: %w", err)
	}
	s := &RegistryServer{
		Registry: reg,
		ln:       ln,
		srv:      &http.Server{Handler: reg, ReadHeaderTimeout: 30 * time.Second},
		done:     make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the host:port the registry listens on.
func (s *RegistryServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *RegistryServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("registry close: %w", err)
	}
	return nil
}
