package auth

import (
	"errors"

	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// Config is what New needs.
type Config struct {
	// NodeName is the name authorization asks about (nodes/<NodeName>).
	NodeName string
	// Authentication and Authorization are the KubeletConfiguration's
	// sections, defaults applied.
	Authentication kubeletv1beta1.KubeletAuthentication
	Authorization  kubeletv1beta1.KubeletAuthorization
	// Client reaches the API server for TokenReview and
	// SubjectAccessReview; nil in standalone mode, where webhook modes
	// refuse to start (ErrNoClient).
	Client Client
}

// Client is the part of the API server clientset the reviews use
// (kubernetes.Interface has it).
type Client interface {
	AuthenticationV1() authenticationv1client.AuthenticationV1Interface
	AuthorizationV1() authorizationv1client.AuthorizationV1Interface
}

// ErrNoClient: a webhook mode is configured but there is no API server
// client (no --kubeconfig).
var ErrNoClient = errors.New("needs an API server client (--kubeconfig)")
