package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

// explain turns the error of a call of req into one that says what is
// wrong:
//
//   - 403: the right that is missing;
//   - 404 and 503: whether the APIService of convoy-apiserver is there and
//     Available (read with the dynamic client); if it is, a 404 that names
//     the Release is "release NS/NAME not found";
//   - anything else: the server's message.
func (c *client) explain(ctx context.Context, req request, err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	s := status.Status()
	switch {
	case s.Code == http.StatusForbidden || apierrors.IsForbidden(err):
		return &explained{fmt.Sprintf("you need %s on releases/%s in %s (namespace %s) to %s: %s",
			req.verb, req.subresource, subresourcesGroup, req.namespace, what(req), s.Message), err}
	case s.Code == http.StatusNotFound || s.Code == http.StatusServiceUnavailable ||
		apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err):
		if apiErr := c.checkAPIService(ctx); apiErr != nil {
			return apiErr
		}
		if isReleaseNotFound(s, req.name) {
			return &explained{fmt.Sprintf("release %s/%s not found", req.namespace, req.name), err}
		}
	}
	if s.Message != "" {
		return &explained{s.Message, err}
	}
	return err
}

// explained is an error of the API server said in the plugin's words; it
// unwraps to the server's, whose status the web view answers with.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// what says in a few words what a request does.
func what(req request) string {
	if req.verb == "create" {
		return "request a " + req.subresource
	}
	return "read the " + req.subresource
}

// isReleaseNotFound tells a 404 for the Release from others (a render that
// is not stored, a group that is not served): convoy-apiserver answers the
// NotFound of apimachinery for the resource releases.
func isReleaseNotFound(s metav1.Status, name string) bool {
	if s.Reason != metav1.StatusReasonNotFound {
		return false
	}
	for _, group := range []string{subresourcesGroup, releasesGVR.Group} {
		gr := subresourcesv1alpha1.Resource("releases")
		gr.Group = group
		if s.Message == apierrors.NewNotFound(gr, name).Error() {
			return true
		}
	}
	return false
}

// checkAPIService returns an error when the APIService of convoy-apiserver
// does not exist or is not Available, and nil when it is Available or
// cannot be read (the caller then reports the error it had).
func (c *client) checkAPIService(ctx context.Context) error {
	svc, err := c.dynamic.Resource(apiServicesGVR).Get(ctx, apiServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("convoy-apiserver is not installed in this cluster: the APIService %s does not exist", apiServiceName)
	case err != nil:
		return nil
	}
	return apiServiceAvailable(svc)
}

// apiServiceAvailable returns nil when the Available condition of the
// APIService svc is True, and an error with its reason and message
// otherwise.
func apiServiceAvailable(svc *unstructured.Unstructured) error {
	conditions, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
	for _, c := range conditions {
		cond, ok := c.(map[string]any)
		if !ok || cond["type"] != "Available" {
			continue
		}
		if cond["status"] == "True" {
			return nil
		}
		reason, _ := cond["reason"].(string)
		message, _ := cond["message"].(string)
		var b strings.Builder
		fmt.Fprintf(&b, "convoy-apiserver is not available: the APIService %s is not Available", apiServiceName)
		if reason != "" {
			fmt.Fprintf(&b, " (%s)", reason)
		}
		if message != "" {
			fmt.Fprintf(&b, ": %s", message)
		}
		return errors.New(b.String())
	}
	return fmt.Errorf("convoy-apiserver is not available: the APIService %s has no Available condition yet", apiServiceName)
}
