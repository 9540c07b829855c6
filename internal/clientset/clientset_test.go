package clientset

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// apiServer answers every request with an object of the kind the path
// names (protobuf when asked for it) and records "METHOD path content-type".
type apiServer struct {
	mu   sync.Mutex
	seen []string
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
	s.mu.Unlock()
	var obj runtime.Object
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/token"):
		obj = &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "t0k3n"}}
	case strings.HasSuffix(p, "/tokenreviews"):
		obj = &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{Authenticated: true}}
	case strings.HasSuffix(p, "/subjectaccessreviews"):
		obj = &authorizationv1.SubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}
	case strings.Contains(p, "/leases"):
		obj = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	case strings.HasSuffix(p, "/pods"):
		obj = &v1.PodList{Items: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web"}}}}
	default:
		obj = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	}
	info, _ := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	gv := gvks[0].GroupVersion()
	w.Header().Set("Content-Type", info.MediaType)
	if err := Codecs.EncoderForVersion(info.Serializer, gv).Encode(obj, w); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func TestClientsetPathsAndProtobuf(t *testing.T) {
	srv := &apiServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cs, err := NewForConfig(&rest.Config{Host: ts.URL, QPS: 100, Burst: 10, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf",
		AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pods, err := cs.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != "web" {
		t.Fatalf("list pods = %+v, %v", pods, err)
	}
	if _, err := cs.Pods("ns").Patch(ctx, "web", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	if l, err := cs.Leases("kube-node-lease").Get(ctx, "node-a", metav1.GetOptions{}); err != nil || l.Name != "node-a" {
		t.Fatalf("get lease = %+v, %v", l, err)
	}
	tr, err := cs.ServiceAccounts("ns").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil || tr.Status.Token != "t0k3n" {
		t.Fatalf("token = %+v, %v", tr, err)
	}
	if r, err := cs.TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{}); err != nil || !r.Status.Authenticated {
		t.Fatalf("token review = %+v, %v", r, err)
	}
	if r, err := cs.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{}); err != nil || !r.Status.Allowed {
		t.Fatalf("subject access review = %+v, %v", r, err)
	}
	want := []string{
		"GET /api/v1/pods ",
		"PATCH /api/v1/namespaces/ns/pods/web/status application/strategic-merge-patch+json",
		"GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a ",
		"POST /api/v1/namespaces/ns/serviceaccounts/default/token application/vnd.kubernetes.protobuf",
		"POST /apis/authentication.k8s.io/v1/tokenreviews application/vnd.kubernetes.protobuf",
		"POST /apis/authorization.k8s.io/v1/subjectaccessreviews application/vnd.kubernetes.protobuf",
	}
	if !slices.Equal(srv.seen, want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(srv.seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewForConfigNeedsBurstWithQPS(t *testing.T) {
	if _, err := NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", QPS: 5}); err == nil {
		t.Fatal("qps 5 with burst 0 accepted")
	}
}

// The scheme holds the groups kernelet uses and no other.
func TestSchemeGroups(t *testing.T) {
	for _, g := range groups {
		if !Scheme.IsVersionRegistered(g.gv) {
			t.Errorf("%s not registered", g.gv)
		}
	}
	if Scheme.IsVersionRegistered(appsv1.SchemeGroupVersion) {
		t.Error("apps/v1 registered: the scheme should hold only the groups kernelet uses")
	}
	if got := len(Scheme.PrioritizedVersionsAllGroups()); got != len(groups) {
		t.Errorf("%d group versions, want %d", got, len(groups))
	}
}
