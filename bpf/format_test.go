package bpf

import (
	"os"
	"path/filepath"
	"testing"
)

func readFormat(t *testing.T, name string) tpFormat {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tracefs", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseTracepointFormat(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func TestParseTracepointFormat(t *testing.T) {
	tests := map[string]struct {
		file   string
		name   string
		id     int
		fields map[string]tpField
	}{
		"mark_victim 6.18": {
			file: "mark_victim-6.18", name: "mark_victim", id: 609,
			fields: map[string]tpField{
				"common_type":   {Name: "common_type", Type: "unsigned short", Offset: 0, Size: 2},
				"pid":           {Name: "pid", Type: "int", Offset: 8, Size: 4, Signed: true},
				"comm":          {Name: "comm", Type: "__data_loc char[]", Offset: 12, Size: 4, DataLoc: true},
				"total_vm":      {Name: "total_vm", Type: "unsigned long", Offset: 16, Size: 8},
				"uid":           {Name: "uid", Type: "uid_t", Offset: 48, Size: 4},
				"oom_score_adj": {Name: "oom_score_adj", Type: "short", Offset: 64, Size: 2, Signed: true},
			},
		},
		"mark_victim pid only": {
			file: "mark_victim-pid-only", name: "mark_victim", id: 437,
			fields: map[string]tpField{"pid": {Name: "pid", Type: "int", Offset: 8, Size: 4, Signed: true}},
		},
		"sched_process_exit": {
			file: "sched_process_exit-6.18", name: "sched_process_exit", id: 369,
			fields: map[string]tpField{
				"comm":       {Name: "comm", Type: "char[16]", Offset: 8, Size: 16, Array: 16},
				"pid":        {Name: "pid", Type: "pid_t", Offset: 24, Size: 4, Signed: true},
				"group_dead": {Name: "group_dead", Type: "bool", Offset: 32, Size: 1},
			},
		},
		"cgroup_mkdir": {
			file: "cgroup_mkdir-6.18", name: "cgroup_mkdir", id: 544,
			fields: map[string]tpField{
				"id":   {Name: "id", Type: "u64", Offset: 16, Size: 8},
				"path": {Name: "path", Type: "__data_loc char[]", Offset: 24, Size: 4, DataLoc: true},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := readFormat(t, tc.file)
			if f.Name != tc.name || f.ID != tc.id {
				t.Errorf("name %q id %d, want %q %d", f.Name, f.ID, tc.name, tc.id)
			}
			for k, want := range tc.fields {
				if got := f.Fields[k]; got != want {
					t.Errorf("field %s = %+v, want %+v", k, got, want)
				}
			}
		})
	}
}

func TestParseTracepointFormatErrors(t *testing.T) {
	tests := map[string]string{
		"empty":        "",
		"no id":        "name: x\nformat:\n\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n",
		"bad id":       "name: x\nID: x1\n",
		"no fields":    "name: x\nID: 1\nformat:\n",
		"bad offset":   "name: x\nID: 1\n\tfield:int pid;\toffset:eight;\tsize:4;\tsigned:1;\n",
		"no size":      "name: x\nID: 1\n\tfield:int pid;\toffset:8;\n",
		"no name":      "name: x\nID: 1\n\tfield:int ;\toffset:8;\tsize:4;\n",
		"negative off": "name: x\nID: 1\n\tfield:int pid;\toffset:-8;\tsize:4;\n",
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if f, err := parseTracepointFormat(in); err == nil {
				t.Errorf("parsed %+v, want an error", f)
			}
		})
	}
}

func TestFormatLayoutFields(t *testing.T) {
	f := readFormat(t, "mark_victim-6.18")
	if off, size, ok := f.layoutField("total_vm", 4, 8); !ok || off != 16 || size != 8 {
		t.Errorf("total_vm: %d %d %v", off, size, ok)
	}
	if _, _, ok := f.layoutField("total_vm", 4); ok {
		t.Error("total_vm accepted with the wrong size")
	}
	if _, _, ok := f.layoutField("comm", 4); ok {
		t.Error("a __data_loc field accepted as an integer")
	}
	if off, dl, ok := f.stringField("comm", 16); !ok || !dl || off != 12 {
		t.Errorf("comm: %d %v %v", off, dl, ok)
	}
	e := readFormat(t, "sched_process_exit-6.18")
	if off, dl, ok := e.stringField("comm", 16); !ok || dl || off != 8 {
		t.Errorf("exit comm: %d %v %v", off, dl, ok)
	}
	if _, _, ok := e.stringField("comm", 32); ok {
		t.Error("a 16-byte array accepted as a 32-byte string")
	}
	if _, _, ok := e.layoutField("missing", 4); ok {
		t.Error("a missing field found")
	}
}
