package quantity

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" = an error
	}{
		{"100Mi", "100Mi"},
		{"1.5", "1500m"},
		{"2e9", "2e9"},
		{"+5E-3", "5m"},
		{"1Ei", "1Ei"},
		{"1e64", "1e64"},
		{"1e-64", "1n"},
		{"1e65", ""},
		{"1e-2000000000", ""},
		{"-1e-99999999999999999999", ""},
		{strings.Repeat("1", MaxLength+1), ""},
		{"lots", ""},
	} {
		q, err := Parse(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("Parse(%q) = %s, want an error", tc.in, q.String())
		case tc.want != "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.in, err)
		case tc.want != "" && q.Cmp(resource.MustParse(tc.want)) != 0:
			t.Errorf("Parse(%q) = %s, want %s", tc.in, q.String(), tc.want)
		}
	}
}
