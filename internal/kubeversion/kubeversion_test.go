package kubeversion

import (
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestGet(t *testing.T) {
	v := Get()
	if _, err := utilversion.ParseSemantic(v); err != nil || !strings.HasPrefix(v, "v1.") {
		t.Errorf("Get() = %q (%v)", v, err)
	}
}
