package podutil

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestCompare(t *testing.T) {
	cases := map[string]struct {
		a, b Ref
		want int
	}{
		"equal":                     {Ref{"ns", "a", "u"}, Ref{"ns", "a", "u"}, 0},
		"namespace first":           {Ref{"a", "z", "z"}, Ref{"b", "a", "a"}, -1},
		"then name":                 {Ref{"ns", "b", "a"}, Ref{"ns", "a", "z"}, 1},
		"then UID":                  {Ref{"ns", "a", "u1"}, Ref{"ns", "a", "u2"}, -1},
		"empty namespace sorts low": {Ref{"", "z", ""}, Ref{"default", "a", ""}, -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Compare(tc.a, tc.b); got != tc.want {
				t.Errorf("Compare = %d, want %d", got, tc.want)
			}
			if got := Compare(tc.b, tc.a); got != -tc.want {
				t.Errorf("Compare reversed = %d, want %d", got, -tc.want)
			}
		})
	}
}

func TestRefOfSort(t *testing.T) {
	pod := func(ns, name, uid string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("u" + uid)}}
	}
	pods := []*v1.Pod{pod("b", "x", "1"), pod("a", "y", "2"), pod("a", "x", "3"), pod("a", "x", "1")}
	slices.SortFunc(pods, func(a, b *v1.Pod) int { return Compare(RefOf(a), RefOf(b)) })
	var got []Ref
	for _, p := range pods {
		got = append(got, RefOf(p))
	}
	want := []Ref{{"a", "x", "u1"}, {"a", "x", "u3"}, {"a", "y", "u2"}, {"b", "x", "u1"}}
	if !slices.Equal(got, want) {
		t.Errorf("sorted = %v, want %v", got, want)
	}
}
