package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func testSpec() Spec {
	return Spec{
		Name: "registry.kernelet.test/unit/app:v2",
		Files: []File{
			{Path: "/usr/bin/app", Mode: 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
			{Path: "bin/sh", Mode: fs.ModeSymlink, Target: "/bin/busybox"},
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			{Path: "/etc/motd", Data: []byte("hello\n")},
		},
		Entrypoint: []string{"/usr/bin/app"},
		Cmd:        []string{"run"},
		Env:        []string{"PATH=/bin"},
	}
}

func TestSplitImageName(t *testing.T) {
	cases := map[string]struct {
		name            string
		host, repo, tag string
		wantErr         bool
	}{
		"simple":    {name: "registry.kernelet.test/pause:3.10", host: "registry.kernelet.test", repo: "pause", tag: "3.10"},
		"nested":    {name: "127.0.0.1:5000/a/b:v1", host: "127.0.0.1:5000", repo: "a/b", tag: "v1"},
		"no tag":    {name: "registry.kernelet.test/pause", wantErr: true},
		"port only": {name: "localhost:5000/pause", wantErr: true},
		"no host":   {name: "pause:3.10", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			host, repo, tag, err := SplitName(tc.name)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("SplitName(%q) = %q %q %q, want an error", tc.name, host, repo, tag)
				}
				return
			}
			if err != nil || host != tc.host || repo != tc.repo || tag != tc.tag {
				t.Fatalf("SplitName(%q) = %q %q %q %v", tc.name, host, repo, tag, err)
			}
		})
	}
}

func TestBuildImageIsDeterministic(t *testing.T) {
	a, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	// Order of files must not matter.
	spec.Files[0], spec.Files[3] = spec.Files[3], spec.Files[0]
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	if a.ManifestDigest != b.ManifestDigest || !reflect.DeepEqual(a.LayerDigests, b.LayerDigests) {
		t.Fatalf("digests differ: %s %v vs %s %v", a.ManifestDigest, a.LayerDigests, b.ManifestDigest, b.LayerDigests)
	}
	if a.ManifestDigest != ociDigest(a.Manifest) {
		t.Fatal("manifest digest does not match the manifest")
	}

	var cfg ociImageConfig
	raw, _ := a.Blob(a.ConfigDigest)
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || !reflect.DeepEqual(cfg.RootFS.DiffIDs, a.LayerDigests) ||
		!reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/usr/bin/app"}) || !reflect.DeepEqual(cfg.Config.Cmd, []string{"run"}) {
		t.Fatalf("config = %s", raw)
	}

	layer, _ := a.Blob(a.LayerDigests[0])
	tr := tar.NewReader(bytes.NewReader(layer))
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(epoch) || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Fatalf("%s: mtime %v uid %d gid %d", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid)
		}
		switch hdr.Name {
		case "bin/sh":
			if hdr.Typeflag != tar.TypeSymlink || hdr.Linkname != "/bin/busybox" {
				t.Fatalf("bin/sh = %+v", hdr)
			}
		case "tmp/":
			if hdr.Mode != 0o1777 {
				t.Fatalf("tmp mode %o, want 1777", hdr.Mode)
			}
		case "usr/bin/app":
			if hdr.Mode != 0o755 {
				t.Fatalf("app mode %o", hdr.Mode)
			}
		case "etc/motd":
			if hdr.Mode != 0o644 {
				t.Fatalf("motd mode %o", hdr.Mode)
			}
		}
		names = append(names, hdr.Name)
	}
	want := []string{"bin/", "bin/sh", "etc/", "etc/motd", "tmp/", "usr/", "usr/bin/", "usr/bin/app"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("layer entries = %q, want %q", names, want)
	}
}

func TestBuildImageRejects(t *testing.T) {
	cases := map[string]Spec{
		"duplicate":      {Name: "h/r:t", Files: []File{{Path: "/a"}, {Path: "a"}}},
		"file as parent": {Name: "h/r:t", Files: []File{{Path: "/a"}, {Path: "/a/b"}}},
		"bad name":       {Name: "nohost"},
		"symlink target": {Name: "h/r:t", Files: []File{{Path: "/l", Mode: fs.ModeSymlink}}},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Build(spec); err == nil {
				t.Fatal("Build succeeded, want an error")
			}
		})
	}
}

func TestOCILayoutRoundTrip(t *testing.T) {
	a, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	spec.Name = "registry.kernelet.test/unit/other:v1"
	spec.Cmd = []string{"other"}
	b, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	var buf1, buf2 bytes.Buffer
	if err := WriteOCILayout(&buf1, a, b); err != nil {
		t.Fatal(err)
	}
	if err := WriteOCILayout(&buf2, a, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf1.Bytes(), buf2.Bytes()) {
		t.Fatal("layout tar is not deterministic")
	}
	got, err := ReadOCILayout(bytes.NewReader(buf1.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], a) || !reflect.DeepEqual(got[1], b) {
		t.Fatalf("round trip: got %d images %+v", len(got), got)
	}

	// index.json names the images for containerd and by OCI ref name.
	tr := tar.NewReader(bytes.NewReader(buf1.Bytes()))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no index.json: %v", err)
		}
		if hdr.Name != "index.json" {
			continue
		}
		var idx ociIndex
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			t.Fatal(err)
		}
		ann := idx.Manifests[0].Annotations
		if ann[ociAnnotationName] != a.Name || ann[ociAnnotationRefName] != "v2" {
			t.Fatalf("annotations = %v", ann)
		}
		break
	}
}

func TestRegistryServesPulls(t *testing.T) {
	img, err := Build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(img)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	do := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	if resp, _ := do("GET", "/v2/"); resp.StatusCode != 200 || resp.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Fatalf("/v2/: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body := do("GET", "/v2/unit/app/manifests/v2")
	if resp.StatusCode != 200 || !bytes.Equal(body, img.Manifest) ||
		resp.Header.Get("Content-Type") != MediaTypeOCIManifest || resp.Header.Get("Docker-Content-Digest") != img.ManifestDigest {
		t.Fatalf("manifest by tag: %d %v", resp.StatusCode, resp.Header)
	}
	resp, body = do("HEAD", "/v2/unit/app/manifests/v2")
	if resp.StatusCode != 200 || len(body) != 0 || resp.ContentLength != int64(len(img.Manifest)) ||
		resp.Header.Get("Docker-Content-Digest") != img.ManifestDigest {
		t.Fatalf("HEAD manifest: %d len %d %v", resp.StatusCode, resp.ContentLength, resp.Header)
	}
	if resp, body := do("GET", "/v2/unit/app/manifests/"+img.ManifestDigest); resp.StatusCode != 200 || !bytes.Equal(body, img.Manifest) {
		t.Fatalf("manifest by digest: %d", resp.StatusCode)
	}
	layer, _ := img.Blob(img.LayerDigests[0])
	if resp, body := do("GET", "/v2/unit/app/blobs/"+img.LayerDigests[0]); resp.StatusCode != 200 || !bytes.Equal(body, layer) {
		t.Fatalf("layer blob: %d", resp.StatusCode)
	}
	if resp, _ := do("HEAD", "/v2/unit/app/blobs/"+img.ConfigDigest); resp.StatusCode != 200 {
		t.Fatalf("HEAD config blob: %d", resp.StatusCode)
	}
	for _, p := range []string{
		"/v2/unit/app/manifests/v3",
		"/v2/unit/other/manifests/v2",
		"/v2/unit/other/blobs/" + img.LayerDigests[0],
		"/v2/unit/app/blobs/sha256:0000",
		"/v1/",
	} {
		if resp, _ := do("GET", p); resp.StatusCode != 404 {
			t.Fatalf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := do("POST", "/v2/unit/app/blobs/uploads/"); resp.StatusCode != 405 {
		t.Fatalf("POST: %d, want 405", resp.StatusCode)
	}
	if n := reg.Served("/v2/unit/app/manifests/v2"); n != 1 {
		t.Fatalf("Served(manifest by tag) = %d, want 1 (HEAD is not counted)", n)
	}
	if n := reg.ServedBlob(img.LayerDigests[0]); n != 1 {
		t.Fatalf("ServedBlob(layer) = %d, want 1", n)
	}
	if !strings.HasPrefix(img.LayerDigests[0], "sha256:") {
		t.Fatal("digest without algorithm")
	}
}
