package bpf

import "testing"

func TestParseAttachMode(t *testing.T) {
	for _, m := range []AttachMode{ModeAuto, ModeTpBTF, ModeRawTP, ModeTracepoint} {
		got, err := ParseAttachMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseAttachMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseAttachMode("kprobe"); err == nil {
		t.Error("kprobe parsed")
	}
	if s := AttachMode(9).String(); s != "AttachMode(9)" {
		t.Errorf("unknown mode prints %q", s)
	}
}

func TestFieldsString(t *testing.T) {
	tests := map[string]struct {
		f    Fields
		want string
	}{
		"none":    {0, "none"},
		"some":    {FieldPid | FieldTgid | FieldComm, "pid|tgid|comm"},
		"unknown": {FieldRSS | 1<<40, "rss|0x10000000000"},
	}
	for name, tc := range tests {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	if !(FieldPid | FieldRSS).Has(FieldRSS) || FieldPid.Has(FieldPid|FieldRSS) {
		t.Error("Has is wrong")
	}
}

func TestCgroupOpString(t *testing.T) {
	if CgroupMkdir.String() != "mkdir" || CgroupRmdir.String() != "rmdir" || CgroupOp(7).String() != "CgroupOp(7)" {
		t.Error("CgroupOp strings")
	}
}
