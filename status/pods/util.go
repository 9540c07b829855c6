package pods

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaZero metav1.Time

func sortedTypes(m map[v1.PodConditionType]v1.PodCondition) []v1.PodConditionType {
	return slices.Sorted(maps.Keys(m))
}

func metav1Now() metav1.Time { return metav1.Now() }
