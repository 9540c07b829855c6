package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: no input panics the KubeletConfiguration decoder, defaulting or
// validation; a file is either a valid config or an *Error whose every
// entry names a field, reported under the file's name. The same input as
// a separate KerneletConfiguration file (--kernelet-config) obeys the
// same rules under its own name.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kernelet(t, data)
		cfg, err := Parse("fuzz.yaml", data)
		if cfg == nil {
			t.Fatalf("Parse returned no config (err %v)", err)
		}
		if err == nil {
			return
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("error is not a *config.Error: %v", err)
		}
		if len(ce.Errs) == 0 || !strings.Contains(err.Error(), "fuzz.yaml") {
			t.Fatalf("error names no field or not the file: %v", err)
		}
		for _, e := range ce.Errs {
			if e.Field == "" {
				t.Fatalf("error without a field path: %v", e)
			}
		}
	})
}

// kernelet checks data as a separate KerneletConfiguration file.
func kernelet(t *testing.T, data []byte) {
	cfg, err := FromDefaultsWith(Options{KerneletFile: "kernelet.yaml"}, data)
	if cfg == nil {
		t.Fatalf("FromDefaultsWith returned no config (err %v)", err)
	}
	if err == nil {
		return
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is not a *config.Error: %v", err)
	}
	if len(ce.KerneletErrs) == 0 || !strings.Contains(err.Error(), "kernelet.yaml") {
		t.Fatalf("error names no field of the kernelet file or not the file: %v", err)
	}
	for _, e := range ce.KerneletErrs {
		if e.Field == "" {
			t.Fatalf("error without a field path: %v", e)
		}
	}
}
