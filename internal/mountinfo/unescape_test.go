package mountinfo

import "testing"

func TestUnescape(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"plain":          {`/sys/fs/cgroup`, `/sys/fs/cgroup`},
		"space":          {`/mnt/a\040b`, "/mnt/a b"},
		"tab newline":    {`a\011b\012c`, "a\tb\nc"},
		"backslash":      {`a\134b`, `a\b`},
		"at the end":     {`/a\040`, "/a "},
		"short escape":   {`/a\04`, `/a\04`},
		"not octal":      {`/a\089`, `/a\089`},
		"above a byte":   {`/a\777`, `/a\777`},
		"lone backslash": {`/a\`, `/a\`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Unescape(tc.in); got != tc.want {
				t.Errorf("Unescape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
