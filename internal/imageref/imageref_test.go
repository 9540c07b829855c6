package imageref

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestDefaultPullPolicy(t *testing.T) {
	const digest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cases := map[string]struct {
		tag    string
		policy v1.PullPolicy
	}{
		"busybox":                                {"latest", v1.PullAlways},
		"busybox:latest":                         {"latest", v1.PullAlways},
		"busybox:1.36":                           {"1.36", v1.PullIfNotPresent},
		"registry.example:5000/team/app":         {"latest", v1.PullAlways},
		"registry.example:5000/team/app:v2":      {"v2", v1.PullIfNotPresent},
		"busybox@" + digest:                      {"", v1.PullIfNotPresent},
		"busybox:latest@" + digest:               {"latest", v1.PullAlways},
		"registry.example:5000/app:v1@" + digest: {"v1", v1.PullIfNotPresent},
		"Not/Valid:Ref!":                         {"", v1.PullIfNotPresent},
		"":                                       {"", v1.PullIfNotPresent},
	}
	for image, tc := range cases {
		if got := Tag(image); got != tc.tag {
			t.Errorf("Tag(%q) = %q, want %q", image, got, tc.tag)
		}
		if got := DefaultPullPolicy(image); got != tc.policy {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", image, got, tc.policy)
		}
	}
}

func TestRepository(t *testing.T) {
	const digest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cases := map[string][2]string{
		"busybox":                          {"docker.io", "library/busybox"},
		"user/app:1.0":                     {"docker.io", "user/app"},
		"registry.example.com/team/app:v1": {"registry.example.com", "team/app"},
		"localhost:5000/app@" + digest:     {"localhost:5000", "app"},
		"localhost/app":                    {"localhost", "app"},
		"Not Valid":                        {"", ""},
	}
	for img, want := range cases {
		if h, r := Repository(img); h != want[0] || r != want[1] {
			t.Errorf("Repository(%q) = %q, %q; want %q", img, h, r, want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                   "docker.io/library/busybox:latest",
		"kernelet.test/testbox:v1":  "kernelet.test/testbox:v1",
		"docker.io/library/busybox": "docker.io/library/busybox:latest",
		"NOT a reference":           "NOT a reference",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}
