package receiver

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	convoyv1alpha1client "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned/typed/convoy/v1alpha1"
)

// ReleaseLister lists the Releases of a namespace that selector selects.
type ReleaseLister interface {
	List(ctx context.Context, namespace string, selector labels.Selector) ([]convoyv1alpha1.Release, error)
}

// Bounds of ClientLister's listing.
const (
	// MaxListedReleases is the most Releases one delivery lists.
	MaxListedReleases = 5000
	listPageSize      = 500
)

// ErrTruncated is returned, wrapped, with the first MaxListedReleases
// Releases when a namespace selects more: the listener refreshes those
// and logs it.
var ErrTruncated = errors.New("more Releases are selected than a delivery lists")

// ClientLister lists Releases with c, the server's own client (the
// listener reads Releases as convoy-apiserver, not as the Receiver's
// ServiceAccount), in pages, at most MaxListedReleases.
func ClientLister(c convoyv1alpha1client.ReleasesGetter) ReleaseLister {
	return clientLister{c}
}

type clientLister struct {
	client convoyv1alpha1client.ReleasesGetter
}

func (l clientLister) List(ctx context.Context, namespace string, selector labels.Selector) ([]convoyv1alpha1.Release, error) {
	if selector == nil {
		return nil, fmt.Errorf("listing the Releases of %s: no selector", namespace)
	}
	var out []convoyv1alpha1.Release
	opts := metav1.ListOptions{LabelSelector: selector.String(), Limit: listPageSize}
	for {
		page, err := l.client.Releases(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the Releases of %s: %w", namespace, err)
		}
		for _, rel := range page.Items {
			// A selector that selects nothing has the string of one that
			// selects everything.
			if !selector.Matches(labels.Set(rel.Labels)) {
				continue
			}
			if len(out) == MaxListedReleases {
				return out, fmt.Errorf("listing the Releases of %s: %w (%d)", namespace, ErrTruncated, MaxListedReleases)
			}
			out = append(out, rel)
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}
