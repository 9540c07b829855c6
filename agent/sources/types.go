package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kernelet/kernelet/internal/podutil"
)

// Source names, the Update.Source of each source and the value of the
// kubernetes.io/config.source annotation (podutil.AnnotationConfigSource)
// on its pods.
const (
	SourceFile = podutil.SourceFile
	SourceHTTP = podutil.SourceHTTP
	SourceAPI  = podutil.SourceAPI
)

// DefaultCheckFrequency is kubelet's fileCheckFrequency and
// httpCheckFrequency default.
const DefaultCheckFrequency = 20 * time.Second

// DefaultDebounce is how long the directory source waits after the first
// inotify event before it rescans, so one editor save is one rescan.
const DefaultDebounce = 100 * time.Millisecond

// SettledDebounce replaces the debounce once a file is complete (renamed
// into the directory, closed after writing, removed): none — the rescan
// starts at once, and changes made while it runs coalesce into the next.
const SettledDebounce = 0

// DefaultHTTPTimeout bounds one request of the URL source (never longer
// than its period).
const DefaultHTTPTimeout = 10 * time.Second

// MaxManifestBytes is the largest manifest file or HTTP body read.
const MaxManifestBytes = 10 << 20

// Op is the kind of an Update.
type Op int

// The operations of an Update. Sources send OpSet; the Merger emits the
// others.
const (
	// OpSet is the full set of pods of one source.
	OpSet Op = iota
	// OpAdd is pods new to the source.
	OpAdd
	// OpUpdate is pods whose spec, metadata or UID changed.
	OpUpdate
	// OpDelete is pods being deleted gracefully (deletionTimestamp set).
	OpDelete
	// OpRemove is pods gone from the source.
	OpRemove
	// OpReconcile is pods whose status alone changed.
	OpReconcile
)

func (o Op) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpDelete:
		return "DELETE"
	case OpRemove:
		return "REMOVE"
	case OpReconcile:
		return "RECONCILE"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Update is a change of the pods of one source. The pods are the
// receiver's own copies.
type Update struct {
	Op     Op
	Source string
	Pods   []*v1.Pod
}

// Problem is input a source could not use: a bad manifest, a duplicate
// pod, an unreadable directory, a failed fetch. It stays reported while
// the cause lasts.
type Problem struct {
	// Source is SourceFile or SourceHTTP.
	Source string
	// File is the manifest file, the directory, or the URL.
	File string
	// Doc is the 1-based document of the file or body; 0 is the file or
	// fetch as a whole.
	Doc int
	// Err is the reason.
	Err error
	// Time is when the problem was first seen.
	Time time.Time
}

func (p Problem) String() string {
	loc := p.File
	if p.Doc > 0 {
		loc = fmt.Sprintf("%s: document %d", p.File, p.Doc)
	}
	return fmt.Sprintf("%s source: %s: %v", p.Source, loc, p.Err)
}

// MarshalJSON encodes the problem for /status, the error as its message.
func (p Problem) MarshalJSON() ([]byte, error) {
	msg := ""
	if p.Err != nil {
		msg = p.Err.Error()
	}
	return json.Marshal(struct {
		Source string    `json:"source"`
		File   string    `json:"file"`
		Doc    int       `json:"doc,omitempty"`
		Error  string    `json:"error"`
		Time   time.Time `json:"time"`
	}{p.Source, p.File, p.Doc, msg, p.Time})
}

// Source is a producer of pods. Run sends the source's full set (OpSet)
// on out whenever it changes, until ctx is done, and then returns.
type Source interface {
	Name() string
	Run(ctx context.Context, out chan<- Update) error
	// Problems are the current problems of the source, oldest first.
	Problems() []Problem
}

// Sentinel errors, for errors.Is.
var (
	// ErrInvalidManifest wraps every reason a manifest document is unusable.
	ErrInvalidManifest = errors.New("invalid manifest")
	// ErrDuplicatePod is a pod full name defined twice in one source.
	ErrDuplicatePod = errors.New("duplicate pod")
	// ErrFetch is a failed request of the URL source.
	ErrFetch = errors.New("fetch failed")
)

// FileOptions configure the manifest directory source.
type FileOptions struct {
	// Path is the directory (or a single manifest file): staticPodPath.
	Path string
	// NodeName is this node; static pod names get "-<NodeName>".
	NodeName string
	// Period is the full rescan period (fileCheckFrequency); 0 means
	// DefaultCheckFrequency.
	Period time.Duration
	// Debounce is the delay between an inotify event and the rescan; 0
	// means DefaultDebounce.
	Debounce time.Duration
	// DisableInotify leaves only the periodic rescan.
	DisableInotify bool
	// Now is the clock for config.seen and problem times; nil is time.Now.
	Now func() time.Time
}

// URLOptions configure the HTTP URL source.
type URLOptions struct {
	// URL is fetched with GET: staticPodURL.
	URL string
	// Header is sent with every request: staticPodURLHeader.
	Header http.Header
	// NodeName is this node.
	NodeName string
	// Period is the fetch period (httpCheckFrequency); 0 means
	// DefaultCheckFrequency.
	Period time.Duration
	// Timeout bounds one request; 0 means DefaultHTTPTimeout. It is never
	// longer than Period.
	Timeout time.Duration
	// Transport makes the requests; nil is a clone of
	// http.DefaultTransport, whose idle connections are closed when Run
	// returns.
	Transport http.RoundTripper
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Options configure every static source of the agent, see Start.
type Options struct {
	NodeName string
	// StaticPodPath enables the directory source when not empty.
	StaticPodPath string
	// FileCheckFrequency is the directory rescan period.
	FileCheckFrequency time.Duration
	// DisableInotify leaves the directory source with its rescan only.
	DisableInotify bool
	// StaticPodURL enables the URL source when not empty.
	StaticPodURL string
	// StaticPodURLHeader is sent with every request to StaticPodURL.
	StaticPodURLHeader map[string][]string
	// HTTPCheckFrequency is the URL fetch period.
	HTTPCheckFrequency time.Duration
}
