package sources

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's huge page rules, for static pods.
func TestValidateResourcesHugePages(t *testing.T) {
	l := func(kv ...string) v1.ResourceList {
		out := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	tests := map[string]struct {
		r    v1.ResourceRequirements
		want string
	}{
		"valid": {r: v1.ResourceRequirements{Requests: l("hugepages-2Mi", "4Mi", "memory", "1Mi"), Limits: l("hugepages-2Mi", "4Mi", "memory", "1Mi")}},
		"request below limit": {r: v1.ResourceRequirements{Requests: l("hugepages-2Mi", "2Mi", "cpu", "1"), Limits: l("hugepages-2Mi", "4Mi")},
			want: `r.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi`},
		"no limit": {r: v1.ResourceRequirements{Requests: l("hugepages-2Mi", "2Mi", "cpu", "1")},
			want: "r.limits: Required value: Limit must be set for non overcommitable resources"},
		"not a multiple": {r: v1.ResourceRequirements{Limits: l("hugepages-2Mi", "3Mi", "cpu", "1")},
			want: `r.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`},
		"without cpu or memory": {r: v1.ResourceRequirements{Limits: l("hugepages-2Mi", "2Mi")},
			want: "r: Forbidden: HugePages require cpu or memory"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			errs := validateResources(tc.r, field.NewPath("r"))
			if got := errs.ToAggregate(); (got == nil) != (tc.want == "") || got != nil && !strings.Contains(got.Error(), tc.want) {
				t.Errorf("errors %v, want %q", got, tc.want)
			}
		})
	}
}
