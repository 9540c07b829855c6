package runtime

import (
	"encoding/base64"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPullCredentials(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("bob:pw"))
	json := `{"auths":{"registry.example.com":{"auth":"` + auth + `"},"registry.example.com/team":{"username":"team","password":"tpw"},` +
		`"*.corp.example":{"username":"corp","password":"c"},"https://index.docker.io/v1/":{"username":"hub","password":"h"}}}`
	secrets := []*v1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(json)}}}
	cases := map[string][]string{
		"registry.example.com/team/app:v1":  {"team", "bob"},
		"registry.example.com/other/app:v1": {"bob"},
		"eu.corp.example/app":               {"corp"},
		"busybox":                           {"hub"},
		"quay.io/app":                       nil,
	}
	for img, want := range cases {
		got, err := PullCredentials(img, secrets)
		if err != nil {
			t.Fatal(err)
		}
		var users []string
		for _, a := range got {
			users = append(users, a.Username)
		}
		if len(users) != len(want) || (len(want) > 0 && users[0] != want[0]) || (len(want) > 1 && users[1] != want[1]) {
			t.Errorf("%s: users %v, want %v", img, users, want)
		}
	}
	got, _ := PullCredentials("registry.example.com/x", secrets)
	if got[0].Password != "pw" || got[0].ServerAddress != "registry.example.com" {
		t.Errorf("auth decoded to %+v", got[0])
	}
}
