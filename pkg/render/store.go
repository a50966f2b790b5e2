package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
)

const (
	// SecretType is the type of the Secrets of the render store.
	SecretType corev1.SecretType = "convoy.kumodo.io/render"
	// SecretKey is the data key that holds the gzip'd JSON array of objects.
	SecretKey = "render"
	// MaxStoredSize is the most a render may take in its Secret once
	// compressed: the API server refuses Secrets whose data passes 1 MiB.
	MaxStoredSize = 1 << 20
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
type Store struct {
	client kubernetes.Interface
	// maxBytes is what a stored render may inflate to.
	maxBytes int
}

// NewStore returns a Store on client with the default Limits (see
// Engine.Store for convoy-apiserver's).
func NewStore(client kubernetes.Interface) *Store {
	return defaultEngine.Store(client)
}

// Get reads render ref of the Release namespace/release. A render that is not
// stored gives an error wrapping ErrNotStored; a stored render whose content
// does not match its ref is an error too, so a corrupt Secret never passes for
// the render it names.
func (s *Store) Get(ctx context.Context, namespace, release, ref string) (*Render, error) {
	name := SecretName(release, ref)
	secret, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("render %s of release %s/%s: %w", ref, namespace, release, ErrNotStored)
	}
	if err != nil {
		return nil, fmt.Errorf("reading render %s of release %s/%s: %w", ref, namespace, release, err)
	}
	if secret.Type != SecretType {
		return nil, fmt.Errorf("secret %s/%s has type %q, not %q", namespace, name, secret.Type, SecretType)
	}
	objects, err := decode(secret.Data[SecretKey], s.maxBytes)
	if errors.Is(err, errInflatesTooFar) {
		return nil, errorf(ReasonStoredRenderTooLarge, err, "stored render %s in secret %s/%s inflates past the limit of %d bytes (--max-render-bytes)",
			ref, namespace, name, s.maxBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding render %s in secret %s/%s: %w", ref, namespace, name, err)
	}
	r, err := New(objects)
	if err != nil {
		return nil, fmt.Errorf("stored render %s in secret %s/%s: %w", ref, namespace, name, err)
	}
	if r.Ref != ref {
		return nil, fmt.Errorf("secret %s/%s holds render %s, not %s", namespace, name, r.Ref, ref)
	}
	return r, nil
}

// Put stores r for the Release, owned by it. Storing a render that is already
// stored changes nothing: equal renders have equal refs.
func (s *Store) Put(ctx context.Context, release *convoyv1alpha1.Release, r *Render) error {
	data, err := encode(r.Objects)
	if err != nil {
		return fmt.Errorf("encoding render %s: %w", r.Ref, err)
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

// errInflatesTooFar is the error of decode for data that inflates past its
// limit.
var errInflatesTooFar = errors.New("the render inflates too far")

// decode inflates data through a reader limited to maxBytes, so a crafted
// Secret (a few hundred KiB that inflate to gigabytes) is refused after
// maxBytes, never inflated whole, and decodes the JSON array of objects.
func decode(data []byte, maxBytes int) ([]*unstructured.Unstructured, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("no %q key", SecretKey)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("inflating: %w", err)
	}
	if len(raw) > maxBytes {
		return nil, fmt.Errorf("%w: past %d bytes", errInflatesTooFar, maxBytes)
	}
	// utiljson keeps integers int64, as the decoders of unstructured do.
	var items []any
	if err := utiljson.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("not a JSON array: %w", err)
	}
	objects := make([]*unstructured.Unstructured, len(items))
	for i, item := range items {
		obj, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("item %d is not an object", i)
		}
		objects[i] = &unstructured.Unstructured{Object: obj}
	}
	return objects, nil
}
