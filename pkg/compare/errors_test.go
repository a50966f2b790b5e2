package compare

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
	"github.com/kumodo/convoy-apiserver/pkg/egress"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

func TestClassify(t *testing.T) {
	ns := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		name string
		step step
		err  error
		want string
	}{
		{"wrapped API error keeps its class", stepDryRun, fmt.Errorf("applying: %w", apierrors.NewBadRequest("x")), ReasonDryRunRejected},
		{"namespace not found on the dry run", stepDryRun, apierrors.NewNotFound(ns, "shop"), ReasonDryRunRejected},
		{"plain 404 on the dry run: kind not served", stepDryRun, apierrors.NewGenericServerResponse(404, "PATCH", schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w", "404 page not found", 0, true), ReasonNoKindMatch},
		{"404 without details", stepGet, apierrors.NewNotFound(schema.GroupResource{}, ""), ReasonNoKindMatch},
		{"conflict on the dry run", stepDryRun, apierrors.NewConflict(ns, "x", errors.New("c")), ReasonDryRunRejected},
		{"unsupported media type on the dry run", stepDryRun, apierrors.NewGenericServerResponse(415, "PATCH", ns, "x", "", 0, false), ReasonDryRunRejected},
		{"502 from a proxy", stepGet, apierrors.NewGenericServerResponse(502, "GET", ns, "x", "bad gateway", 0, true), failure.ReasonClusterUnreachable},
		{"server timeout", stepGet, apierrors.NewServerTimeout(ns, "get", 1), failure.ReasonClusterUnreachable},
		{"unexpected EOF", stepGet, fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), failure.ReasonClusterUnreachable},
		{"gone on get", stepGet, apierrors.NewGone("gone"), ReasonReadFailed},
		{"an error that names its reason", stepGet, &url.Error{Op: "Get", URL: "https://169.254.169.254", Err: &net.OpError{Op: "dial", Err: refusedAddress}}, "AddressNotAllowed"},
		{"an answer over the limit, as client-go wraps it", stepGet, fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w",
			&failure.Error{Reason: cluster.ReasonResponseTooLarge, Message: "too large"}), cluster.ReasonResponseTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, what := classifyObjectFailure(tt.step, "", tt.err)
			assert.Equal(t, tt.want, got, what)
			assert.NotEmpty(t, what)
		})
	}
}

// refusedAddress is the dialer's refusal of an address (the hook alone: no
// connection is made).
var refusedAddress = egress.AddressPolicy{}.Control("tcp", "169.254.169.254:443", nil)

func TestIsResourceNotServed(t *testing.T) {
	assert.False(t, isResourceNotServed(apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")))
	assert.False(t, isResourceNotServed(errors.New("x")))
	assert.False(t, isResourceNotServed(apierrors.NewBadRequest("x")))
	assert.True(t, isResourceNotServed(apierrors.NewGenericServerResponse(404, "GET", schema.GroupResource{Resource: "widgets"}, "w", "404 page not found", 0, true)))
}
