package pods

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metaZero metav1.Time

func metav1Now() metav1.Time { return metav1.Now() }
