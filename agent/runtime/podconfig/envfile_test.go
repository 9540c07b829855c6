package podconfig

import "testing"

func TestEnvFileValue(t *testing.T) {
	file := "# comment\n\n  A='one' # trailing\nB='two\nlines'\nC= 'blank after ='\nD=''\nA='second'\n"
	for key, want := range map[string]string{"A": "one", "B": "two\nlines", "C": "", "D": "", "X": ""} {
		got, err := EnvFileValue([]byte(file), key)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", key, got, err, want)
		}
	}
	for name, bad := range map[string]string{
		"unquoted":            "A=one\n",
		"blank before =":      "A ='one'\n",
		"no =":                "A\n",
		"unclosed":            "A='one\n",
		"content after quote": "A='one' two\n",
		"empty name":          "='x'\n",
	} {
		if _, err := EnvFileValue([]byte(bad), "A"); err == nil {
			t.Errorf("%s: %q parsed", name, bad)
		}
	}
}
