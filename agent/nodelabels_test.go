package agent

import (
	"maps"
	"testing"
)

func TestParseNodeLabels(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want map[string]string
		bad  bool
	}{
		"empty":          {in: "", want: map[string]string{}},
		"two":            {in: "a=b, example.com/role=edge", want: map[string]string{"a": "b", "example.com/role": "edge"}},
		"empty value":    {in: "a=", want: map[string]string{"a": ""}},
		"no equals sign": {in: "a", bad: true},
		"bad key":        {in: "-a=b", bad: true},
		"bad value":      {in: "a=b c", bad: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseNodeLabels(tc.in)
			if (err != nil) != tc.bad {
				t.Fatalf("err %v, want bad=%v", err, tc.bad)
			}
			if !tc.bad && !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
