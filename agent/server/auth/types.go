package auth

import (
	"errors"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/kernelet/kernelet/internal/clientset"
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

// Client is the part of the API server client the reviews use
// (clientset.Interface has it).
type Client interface {
	TokenReviews() clientset.TokenReviewClient
	SubjectAccessReviews() clientset.SubjectAccessReviewClient
}

// ErrNoClient: a webhook mode is configured but there is no API server
// client (no --kubeconfig).
var ErrNoClient = errors.New("needs an API server client (--kubeconfig)")
