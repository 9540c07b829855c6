package main

import (
	"reflect"
	"strings"
	"testing"
)

func parseFixtures(t *testing.T) (main, other *goFile, files map[string]*goFile) {
	t.Helper()
	main, err := parseSource("testdata/main_features.go.txt", pkgSource{importPath: "example.com/main/features", register: true})
	if err != nil {
		t.Fatal(err)
	}
	other, err = parseSource("testdata/other_features.go.txt", pkgSource{importPath: "example.com/other/features", register: true})
	if err != nil {
		t.Fatal(err)
	}
	return main, other, map[string]*goFile{"example.com/main/features": main, "example.com/other/features": other}
}

// Constants typed, untyped and converted; keys local and of another
// package; the spec in effect at 1.37 with minimum compatibility 1.36.
func TestCollectFixture(t *testing.T) {
	main, other, files := parseFixtures(t)
	if want := map[string]string{"Typed": "Typed", "Untyped": "Untyped", "Converted": "Converted"}; !reflect.DeepEqual(main.consts, want) {
		t.Errorf("consts = %v, want %v", main.consts, want)
	}
	specs, deps := map[string][]spec{}, map[string][]string{}
	for _, f := range []*goFile{other, main} { // the same specs twice: accepted
		if err := f.maps(files, specs, deps); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]struct {
		gate string
		want spec
	}{
		"newer spec ignored":            {"Typed", spec{version: minor{1, 36}, def: true, stage: "Beta"}},
		"min compatibility not met":     {"Untyped", spec{version: minor{1, 37}, stage: "Beta"}},
		"not yet available":             {"Converted", spec{stage: "PreAlpha"}},
		"another package's, deprecated": {"RemoteName", spec{version: minor{1, 31}, stage: "Deprecated", locked: true}},
	}
	for name, tc := range cases {
		if got := inEffect(specs[tc.gate]); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %s = %+v, want %+v", name, tc.gate, got, tc.want)
		}
	}
	if want := map[string][]string{"Typed": {"RemoteName", "Untyped"}}; !reflect.DeepEqual(deps, want) {
		t.Errorf("deps = %v, want %v", deps, want)
	}
}

func TestCollectConflictingSpecs(t *testing.T) {
	main, _, files := parseFixtures(t)
	specs := map[string][]spec{"RemoteName": {{version: minor{1, 0}, def: true, stage: "GA"}}}
	err := main.maps(files, specs, map[string][]string{})
	if err == nil || !strings.Contains(err.Error(), "gate RemoteName registered twice with different specs") {
		t.Errorf("err = %v", err)
	}
}

func TestRenderIsGoAndSorted(t *testing.T) {
	src, err := render([]gate{{name: "A", stage: "GA", def: true, locked: true, kubelet: true, requires: []string{"B"}}, {name: "B", stage: "Beta"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`"A": {Stage: StageGA, Default: true, Locked: true, Kubelet: true, Requires: []string{"B"}},`,
		`"B": {Stage: StageBeta, Default: false},`,
		"DO NOT EDIT",
	} {
		if !strings.Contains(string(src), s) {
			t.Errorf("output lacks %q:\n%s", s, src)
		}
	}
}
