package sources

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Manifest is one pod decoded from a manifest file or body, or the reason
// one document could not be decoded.
type Manifest struct {
	// Doc is the 1-based document of the file.
	Doc int
	// Item is the index in a PodList document; -1 for a Pod document.
	Item int
	// Pod is the pod as written (TypeMeta v1 Pod), not defaulted; nil
	// when Err is set.
	Pod *v1.Pod
	// Err says why the document (or PodList item) is unusable; it wraps
	// ErrInvalidManifest.
	Err error
	// Warnings name unknown and duplicate fields, which are ignored (as
	// kubelet ignores them).
	Warnings []string
}

// Decode splits data into YAML documents ("---" lines) and decodes each:
// a v1 Pod, or a v1 PodList whose items are pods. JSON is YAML, so a JSON
// Pod or PodList works too. Empty documents (only blanks or comments) are
// skipped. Every document yields one Manifest per pod or one with Err set.
func Decode(data []byte) []Manifest {
	ms, _ := decode(data)
	return ms
}

// decode is Decode that also counts the non-empty documents (an empty
// PodList is one but yields no Manifest).
func decode(data []byte) ([]Manifest, int) {
	var (
		out  []Manifest
		docs int
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, docs
		}
		if err != nil {
			// The splitter cannot resynchronize: the rest is unusable.
			return append(out, Manifest{Doc: doc, Item: -1, Err: invalid("%w", err)}), docs + 1
		}
		ms, empty := decodeDocument(doc, raw)
		if !empty {
			docs++
		}
		out = append(out, ms...)
	}
}

// decodeDocument decodes one document; empty reports a document without
// content (blanks, comments, null).
func decodeDocument(doc int, raw []byte) (_ []Manifest, empty bool) {
	bad := func(err error) ([]Manifest, bool) { return []Manifest{{Doc: doc, Item: -1, Err: err}}, false }
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return bad(invalid("%w", err))
	}
	js = bytes.TrimSpace(js)
	if bytes.Equal(js, []byte("null")) {
		return nil, true // an empty document
	}
	if len(js) == 0 || js[0] != '{' {
		return bad(invalid("not an object"))
	}
	if err := checkQuantities(js); err != nil {
		return bad(invalid("%w", err))
	}
	var dupWarn []string
	if _, err := yaml.YAMLToJSONStrict(raw); err != nil {
		// Duplicate keys: the last value is used, as kubelet does.
		dupWarn = []string{err.Error()}
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return bad(invalid("apiVersion and kind: %w", err))
	}
	switch {
	case tm.Kind == "":
		return bad(invalid("kind is missing: want a v1 Pod or PodList"))
	case tm.APIVersion != "v1" || (tm.Kind != "Pod" && tm.Kind != "PodList"):
		return bad(invalid("unsupported %s %q: want a v1 Pod or PodList", tm.Kind, tm.APIVersion))
	case tm.Kind == "Pod":
		pod := &v1.Pod{}
		warns, err := unmarshal(js, pod)
		if err != nil {
			return bad(invalid("%w", err))
		}
		pod.TypeMeta = podTypeMeta
		return []Manifest{{Doc: doc, Item: -1, Pod: pod, Warnings: append(dupWarn, warns...)}}, false
	}
	list := &v1.PodList{}
	warns, err := unmarshal(js, list)
	if err != nil {
		return bad(invalid("%w", err))
	}
	var out []Manifest
	for i := range list.Items {
		pod := &list.Items[i]
		m := Manifest{Doc: doc, Item: i, Pod: pod}
		if pod.Kind != "" && pod.Kind != "Pod" || pod.APIVersion != "" && pod.APIVersion != "v1" {
			m = Manifest{Doc: doc, Item: i, Err: invalid("items[%d]: unsupported %s %q: want a v1 Pod", i, pod.Kind, pod.APIVersion)}
		} else {
			pod.TypeMeta = podTypeMeta
		}
		if i == 0 {
			m.Warnings = append(dupWarn, warns...)
		}
		out = append(out, m)
	}
	return out, false
}

var podTypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}

// unmarshal decodes JSON case-sensitively, as the API server does; unknown
// and duplicate fields are returned as warnings.
func unmarshal(js []byte, into any) ([]string, error) {
	strict, err := sigsjson.UnmarshalStrict(js, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	var warns []string
	for _, e := range strict {
		warns = append(warns, e.Error())
	}
	return warns, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrInvalidManifest, fmt.Errorf(format, args...))
}
