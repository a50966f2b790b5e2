package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/bounded"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/jsonobjects"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

const (
	// SecretType is the type of the Secrets of the render store.
	SecretType corev1.SecretType = "convoy.kumodo.io/render"
	// SecretKey is the data key that holds the gzip'd JSON array of objects.
	SecretKey = "render"
	// MaxStoredSize is the most a render may take in its Secret once
	// compressed: the API server refuses Secrets whose data passes 1 MiB.
	MaxStoredSize = 1 << 20
	// MaxStoredString is the longest string (a key or a value, decoded) a
	// stored render may hold: no Kubernetes object holds a longer one (etcd
	// refuses objects past 1.5 MiB unless its --max-request-bytes is
	// raised). A longer one is refused while it is read, before it is
	// buffered: a Secret of 33 KiB would otherwise hold a string of 32 MiB,
	// which costs three times that to decode.
	MaxStoredString = 2 << 20
	// MaxStoredDecodes is how many stored renders an Engine decodes at
	// once; the others wait (or give up with their request): a decode
	// takes a few times the render's inflated size, up to
	// --max-render-bytes, so ten requests at once must not take ten times
	// that.
	MaxStoredDecodes = 2
)

// ErrNotStored is returned by Store.Get for a render that is not in the store.
var ErrNotStored = errors.New("render not in the render store")

// ErrTooLarge is returned by Store.Put for a render over MaxStoredSize.
var ErrTooLarge = errors.New("render too large for the render store")

// SecretName is the name of the Secret that holds render ref of release.
func SecretName(release, ref string) string {
	return "convoy-render." + release + "." + ref
}

// Store keeps renders in Secrets of the Release's namespace: one Secret per
// render, type convoy.kumodo.io/render, named convoy-render.<release>.<ref>.
// Engine.Store builds one.
type Store struct {
	client kubernetes.Interface
	// limits bound what a stored render may inflate to (MaxBytes) and hold
	// (MaxObjects).
	limits Limits
	// decodes holds a token per decode running: the Engine's, of
	// MaxStoredDecodes.
	decodes chan struct{}
}

// Get reads render ref of the Release namespace/release, with the revision
// of the source its Secret names (Render.Resolved; nil when it names
// none) and that of its values source (Render.ValuesResolved, the
// annotation AnnotationResolvedValuesSource; nil when it names none): what
// the Secret says, which Get does not verify. A render that is not
// stored gives an error wrapping ErrNotStored. Any other failure is a
// *failure.Error: a Secret that may not be read, InputForbidden; that could
// not be read, or whose request ended while it waited for its turn to be
// decoded (at most MaxStoredDecodes at once), InputUnavailable; that
// inflates past the limit or holds a string past MaxStoredString,
// StoredRenderTooLarge; one whose content is not a render or does not match
// its ref, StoredRenderInvalid, so that a corrupt Secret never passes for the
// render it names.
func (s *Store) Get(ctx context.Context, namespace, release, ref string) (*Render, error) {
	secret := convoyv1alpha1.ObjectKey{Kind: "Secret", Namespace: namespace, Name: SecretName(release, ref)}
	got, err := s.client.CoreV1().Secrets(namespace).Get(ctx, secret.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("render %s of release %s/%s: %w", ref, namespace, release, ErrNotStored)
	case apierrors.IsForbidden(err):
		return nil, failure.New(sourcefailure.ReasonInputForbidden, err, "render %s in %s may not be read", ref, secret.Describe())
	case err != nil:
		return nil, sourcefailure.Unavailable(err, "render %s in %s could not be read", ref, secret.Describe())
	}
	if got.Type != SecretType {
		return nil, failure.New(ReasonStoredRenderInvalid, nil, "%s has type %q, not %q", secret.Describe(), got.Type, SecretType)
	}
	select {
	case s.decodes <- struct{}{}:
	case <-ctx.Done():
		return nil, sourcefailure.Unavailable(context.Cause(ctx), "render %s in %s: the request ended while it waited for one of the %d stored renders decoded now",
			ref, secret.Describe(), cap(s.decodes))
	}
	objects, err := decode(got.Data[SecretKey], s.limits)
	<-s.decodes
	if f, ok := failure.As(err); ok {
		return nil, failure.Quiet(f.Reason, f, "stored render %s in %s: %s", ref, secret.Describe(), f.Message)
	}
	if err != nil {
		return nil, failure.New(ReasonStoredRenderInvalid, err, "stored render %s in %s does not decode", ref, secret.Describe())
	}
	r, err := New(objects)
	if err != nil {
		return nil, failure.New(ReasonStoredRenderInvalid, err, "stored render %s in %s", ref, secret.Describe())
	}
	if r.Ref != ref {
		return nil, failure.New(ReasonStoredRenderInvalid, nil, "%s holds render %s, not %s", secret.Describe(), r.Ref, ref)
	}
	if v, ok := got.Annotations[convoyv1alpha1.AnnotationResolvedSource]; ok {
		// What the Secret says; desired verifies it where the Release asks.
		if r.Resolved, err = decodeResolved(v); err != nil {
			return nil, failure.New(ReasonStoredRenderInvalid, err, "%s: annotation %s", secret.Describe(), convoyv1alpha1.AnnotationResolvedSource)
		}
	}
	if v, ok := got.Annotations[convoyv1alpha1.AnnotationResolvedValuesSource]; ok {
		// What the Secret says of spec.valuesSource; verified as Resolved is.
		if r.ValuesResolved, err = decodeResolved(v); err != nil {
			return nil, failure.New(ReasonStoredRenderInvalid, err, "%s: annotation %s", secret.Describe(), convoyv1alpha1.AnnotationResolvedValuesSource)
		}
	}
	return r, nil
}

// encodeResolved is the annotation AnnotationResolvedSource (or
// AnnotationResolvedValuesSource) of a render made from r: its revision, without the signatures it was verified with
// (a stored render is verified again when it is used).
func encodeResolved(r *subresourcesv1alpha1.ResolvedSource) (string, error) {
	revision := *r
	revision.Verified, revision.VerifiedTag = nil, nil
	raw, err := json.Marshal(&revision)
	return string(raw), err
}

// decodeResolved reads the annotation AnnotationResolvedSource (or
// AnnotationResolvedValuesSource): a
// resolvedSource with a kind and a url.
func decodeResolved(v string) (*subresourcesv1alpha1.ResolvedSource, error) {
	var r subresourcesv1alpha1.ResolvedSource
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a resolvedSource: %w", err)
	}
	if r.Kind == "" || r.URL == "" || r.Verified != nil || r.VerifiedTag != nil {
		return nil, errors.New("a resolvedSource names a kind and a url, and no signature")
	}
	return &r, nil
}

// Put stores r for the Release, owned by it, with the revision of the
// source it was rendered from (r.Resolved, for an OCI, Helm or Git source)
// in the annotation AnnotationResolvedSource, and that of its values source
// (r.ValuesResolved) in AnnotationResolvedValuesSource. Storing a render that is
// already stored changes nothing: equal renders have equal refs.
func (s *Store) Put(ctx context.Context, release *convoyv1alpha1.Release, r *Render) error {
	data, err := encode(r.Objects)
	if err != nil {
		return fmt.Errorf("encoding render %s: %w", r.Ref, err)
	}
	annotations := map[string]string{}
	if r.Resolved != nil {
		v, err := encodeResolved(r.Resolved)
		if err != nil {
			return fmt.Errorf("encoding the source of render %s: %w", r.Ref, err)
		}
		annotations[convoyv1alpha1.AnnotationResolvedSource] = v
	}
	if r.ValuesResolved != nil {
		v, err := encodeResolved(r.ValuesResolved)
		if err != nil {
			return fmt.Errorf("encoding the values source of render %s: %w", r.Ref, err)
		}
		annotations[convoyv1alpha1.AnnotationResolvedValuesSource] = v
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	if len(data) > MaxStoredSize {
		return fmt.Errorf("render %s of release %s/%s is %d bytes compressed, over the %d bytes a Secret holds: %w",
			r.Ref, release.Namespace, release.Name, len(data), MaxStoredSize, ErrTooLarge)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SecretName(release.Name, r.Ref),
			Namespace: release.Namespace,
			Labels: map[string]string{
				convoyv1alpha1.LabelRelease:   release.Name,
				convoyv1alpha1.LabelRenderRef: r.Ref,
			},
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: convoyv1alpha1.SchemeGroupVersion.String(),
				Kind:       "Release",
				Name:       release.Name,
				UID:        release.UID,
			}},
		},
		Type:      SecretType,
		Immutable: new(true),
		Data:      map[string][]byte{SecretKey: data},
	}
	_, err = s.client.CoreV1().Secrets(release.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storing render %s of release %s/%s: %w", r.Ref, release.Namespace, release.Name, err)
	}
	return nil
}

func encode(objects []*unstructured.Unstructured) ([]byte, error) {
	items := make([]map[string]any, len(objects))
	for i, o := range objects {
		items[i] = o.Object
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decode inflates data as it decodes the JSON array of objects, through a
// reader that fails past limits.MaxBytes, so a crafted Secret (a few hundred
// KiB that inflate to gigabytes) is refused after MaxBytes, never inflated
// whole; it stops at the first object past limits.MaxObjects, so a small
// Secret of many tiny objects is never decoded whole either; and at the
// first string past MaxStoredString, before it is buffered whole. The
// refusals are *failure.Error (StoredRenderTooLarge, TooManyObjects).
func decode(data []byte, limits Limits) ([]*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("no %q key", SecretKey)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	return decodeInflating(zr, limits)
}

// errInflatesTooFar is the error of the inflated data past the limit.
var errInflatesTooFar = errors.New("the render inflates too far")

// decodeInflating is decode on the reader of the inflated data.
func decodeInflating(zr io.Reader, limits Limits) ([]*unstructured.Unstructured, error) {
	inflated := bounded.NewReader(zr, int64(limits.MaxBytes), func() error { return errInflatesTooFar })
	objects, err := jsonobjects.Decode(inflated, limits.MaxObjects, MaxStoredString, func() error {
		return failure.New(ReasonTooManyObjects, nil, "it holds more objects than the limit of %d (--max-render-objects)", limits.MaxObjects)
	})
	switch {
	case errors.Is(err, errInflatesTooFar):
		return nil, failure.New(ReasonStoredRenderTooLarge, nil, "it inflates past the limit of %d bytes (--max-render-bytes)", limits.MaxBytes)
	case errors.Is(err, jsonobjects.ErrStringTooLong):
		return nil, failure.New(ReasonStoredRenderTooLarge, nil, "it holds a string longer than %d bytes, the limit of a stored render's string (no Kubernetes object holds one): refused while it was read",
			MaxStoredString)
	}
	return objects, err
}
