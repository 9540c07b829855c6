package devicemanager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func metavGen(uid, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"}
}
