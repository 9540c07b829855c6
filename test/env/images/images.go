package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

// The test images. None of them exists anywhere but on this machine: they
// are built by BuildSet, imported into the test containerd, and
// served by the test registry (see Registry), which containerd uses as the
// mirror for TestRegistryHost.
const (
	TestRegistryHost = "registry.kernelet.test"
	// PauseImage is the sandbox image: /testbox in pause mode.
	PauseImage = TestRegistryHost + "/pause:3.10"
	// TestboxImage is busybox plus /testbox (entrypoint /testbox, cmd
	// "sleep"). It is imported into containerd.
	TestboxImage = TestRegistryHost + "/testbox:v1"
	// MirrorOnlyImage is TestboxImage plus /etc/kernelet-mirror-only, so it
	// has a layer of its own. It is never imported: only the registry serves
	// it, so running it proves a pull went through the mirror.
	MirrorOnlyImage = TestRegistryHost + "/testbox:mirror-only"
)

// OCI media types and annotations used by the images.
const (
	MediaTypeOCIManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeOCIIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeOCIConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeOCILayer    = "application/vnd.oci.image.layer.v1.tar"

	ociAnnotationName    = "io.containerd.image.name"
	ociAnnotationRefName = "org.opencontainers.image.ref.name"
)

// epoch is the mtime of every file and the creation time of every
// image, so that building twice gives the same digests.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// File is one entry of an image layer.
type File struct {
	// Path inside the image; absolute or relative to /.
	Path string
	// Mode holds the permission bits plus fs.ModeDir for a directory or
	// fs.ModeSymlink for a symbolic link. 0 means 0644 for a file and 0755
	// for a directory.
	Mode fs.FileMode
	// Data is the content of a regular file.
	Data []byte
	// Target is where a symbolic link points.
	Target string
}

// Spec describes a single-layer image.
type Spec struct {
	// Name is the full reference, host/repository:tag.
	Name       string
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	Labels     map[string]string
}

// Image is a built OCI image with one uncompressed layer, held in memory.
type Image struct {
	// Name is the full reference, host/repository:tag.
	Name           string
	Manifest       []byte
	ManifestDigest string
	ConfigDigest   string
	LayerDigests   []string

	blobs map[string][]byte
}

// Blob returns the content of one of the image's blobs (config or layer)
// by digest.
func (i *Image) Blob(digest string) ([]byte, bool) {
	b, ok := i.blobs[digest]
	return b, ok
}

// Size is the total size of manifest, config and layers in bytes.
func (i *Image) Size() int64 {
	n := int64(len(i.Manifest))
	for _, b := range i.blobs {
		n += int64(len(b))
	}
	return n
}

// SplitName splits host/repository:tag into its parts.
func SplitName(name string) (host, repo, tag string, err error) {
	host, rest, ok := strings.Cut(name, "/")
	if !ok || host == "" {
		return "", "", "", fmt.Errorf("image name %q: no registry host", name)
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 || strings.Contains(rest[i:], "/") {
		return "", "", "", fmt.Errorf("image name %q: no tag", name)
	}
	return host, rest[:i], rest[i+1:], nil
}

func ociDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
}

type ociPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociImageConfig struct {
	Created      string            `json:"created"`
	Architecture string            `json:"architecture"`
	OS           string            `json:"os"`
	Config       ociContainerCfg   `json:"config"`
	RootFS       ociRootFS         `json:"rootfs"`
	History      []ociHistoryEntry `json:"history"`
}

type ociContainerCfg struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

type ociRootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type ociHistoryEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// Build builds spec into an image for linux/GOARCH. The result only
// depends on spec: files are sorted, times and owners fixed.
func Build(spec Spec) (*Image, error) {
	if _, _, _, err := SplitName(spec.Name); err != nil {
		return nil, err
	}
	layer, err := buildLayer(spec.Files)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	layerDigest := ociDigest(layer)
	created := epoch.Format(time.RFC3339)
	config, err := json.Marshal(ociImageConfig{
		Created:      created,
		Architecture: runtime.GOARCH,
		OS:           "linux",
		Config: ociContainerCfg{
			Entrypoint: spec.Entrypoint,
			Cmd:        spec.Cmd,
			Env:        spec.Env,
			WorkingDir: spec.WorkingDir,
			Labels:     spec.Labels,
		},
		RootFS:  ociRootFS{Type: "layers", DiffIDs: []string{layerDigest}},
		History: []ociHistoryEntry{{Created: created, CreatedBy: "kernelet test/env Build"}},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", spec.Name, err)
	}
	configDigest := ociDigest(config)
	manifest, err := json.Marshal(ociManifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeOCIManifest,
		Config:        ociDescriptor{MediaType: MediaTypeOCIConfig, Digest: configDigest, Size: int64(len(config))},
		Layers:        []ociDescriptor{{MediaType: MediaTypeOCILayer, Digest: layerDigest, Size: int64(len(layer))}},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: manifest: %w", spec.Name, err)
	}
	return &Image{
		Name:           spec.Name,
		Manifest:       manifest,
		ManifestDigest: ociDigest(manifest),
		ConfigDigest:   configDigest,
		LayerDigests:   []string{layerDigest},
		blobs:          map[string][]byte{configDigest: config, layerDigest: layer},
	}, nil
}

// buildLayer writes files, plus every parent directory not listed, as an
// uncompressed tar sorted by path.
func buildLayer(files []File) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		name := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if name == "" {
			return nil, fmt.Errorf("file %q: empty path", f.Path)
		}
		if _, dup := entries[name]; dup {
			return nil, fmt.Errorf("file %q listed twice", f.Path)
		}
		entries[name] = f
	}
	for name := range entries {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if f, ok := entries[dir]; ok {
				if f.Mode&fs.ModeDir == 0 {
					return nil, fmt.Errorf("%q is a parent directory and a file", dir)
				}
				continue
			}
			entries[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		f := entries[name]
		perm := int64(f.Mode.Perm())
		if f.Mode&fs.ModeSticky != 0 {
			perm |= 0o1000
		}
		hdr := &tar.Header{Name: name, ModTime: epoch, Uname: "root", Gname: "root"}
		switch {
		case f.Mode&fs.ModeDir != 0:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if perm == 0 {
				perm = 0o755
			}
		case f.Mode&fs.ModeSymlink != 0:
			if f.Target == "" {
				return nil, fmt.Errorf("symlink %q: no target", name)
			}
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = f.Target
			perm = 0o777
		case f.Mode.Type() == 0:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.Data))
			if perm == 0 {
				perm = 0o644
			}
		default:
			return nil, fmt.Errorf("file %q: unsupported mode %v", name, f.Mode)
		}
		hdr.Mode = perm
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar %s: %w", name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("tar %s: %w", name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteOCILayout writes images as one OCI image-layout tar: oci-layout,
// index.json (one manifest per image, named by the io.containerd.image.name
// and org.opencontainers.image.ref.name annotations) and blobs/sha256/*.
// `ctr images import` reads it. The output is deterministic.
func WriteOCILayout(w io.Writer, images ...*Image) error {
	blobs := map[string][]byte{}
	index := ociIndex{SchemaVersion: 2, MediaType: MediaTypeOCIIndex}
	for _, img := range images {
		_, _, tag, err := SplitName(img.Name)
		if err != nil {
			return err
		}
		blobs[img.ManifestDigest] = img.Manifest
		for d, b := range img.blobs {
			blobs[d] = b
		}
		index.Manifests = append(index.Manifests, ociDescriptor{
			MediaType: MediaTypeOCIManifest,
			Digest:    img.ManifestDigest,
			Size:      int64(len(img.Manifest)),
			Annotations: map[string]string{
				ociAnnotationName:    img.Name,
				ociAnnotationRefName: tag,
			},
			Platform: &ociPlatform{Architecture: runtime.GOARCH, OS: "linux"},
		})
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	tw := tar.NewWriter(w)
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("layout %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("layout %s: %w", name, err)
		}
		return nil
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := add("index.json", indexJSON); err != nil {
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("layout %s: %w", dir, err)
		}
	}
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := add("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), blobs[d]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layout: %w", err)
	}
	return nil
}

// ReadOCILayout reads images back from an OCI image-layout tar written by
// WriteOCILayout, verifying every digest.
func ReadOCILayout(r io.Reader) ([]*Image, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read layout: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read layout %s: %w", hdr.Name, err)
		}
		files[path.Clean(hdr.Name)] = b
	}
	blob := func(d ociDescriptor) ([]byte, error) {
		hexDigest, ok := strings.CutPrefix(d.Digest, "sha256:")
		if !ok {
			return nil, fmt.Errorf("digest %q: not sha256", d.Digest)
		}
		b, ok := files["blobs/sha256/"+hexDigest]
		if !ok {
			return nil, fmt.Errorf("blob %s missing", d.Digest)
		}
		if ociDigest(b) != d.Digest || int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s: digest or size mismatch", d.Digest)
		}
		return b, nil
	}
	var index ociIndex
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		return nil, fmt.Errorf("read layout index.json: %w", err)
	}
	var images []*Image
	for _, desc := range index.Manifests {
		name := desc.Annotations[ociAnnotationName]
		if name == "" {
			return nil, fmt.Errorf("manifest %s: no %s annotation", desc.Digest, ociAnnotationName)
		}
		mb, err := blob(desc)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", name, err)
		}
		var m ociManifest
		if err := json.Unmarshal(mb, &m); err != nil {
			return nil, fmt.Errorf("image %s: manifest: %w", name, err)
		}
		img := &Image{Name: name, Manifest: mb, ManifestDigest: desc.Digest, ConfigDigest: m.Config.Digest, blobs: map[string][]byte{}}
		for _, d := range append([]ociDescriptor{m.Config}, m.Layers...) {
			b, err := blob(d)
			if err != nil {
				return nil, fmt.Errorf("image %s: %w", name, err)
			}
			img.blobs[d.Digest] = b
		}
		for _, l := range m.Layers {
			img.LayerDigests = append(img.LayerDigests, l.Digest)
		}
		images = append(images, img)
	}
	return images, nil
}
