package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

const (
	// subresourcesGroup is the group convoy-apiserver serves.
	subresourcesGroup = subresourcesv1alpha1.GroupName
	// apiServiceName is the APIService that registers convoy-apiserver.
	apiServiceName = "v1alpha1." + subresourcesv1alpha1.GroupName
)

var (
	apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	releasesGVR    = convoyv1alpha1.SchemeGroupVersion.WithResource("releases")
	namespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// request names a call of a subresource of a Release.
type request struct {
	verb        string // get or create, as RBAC names it
	subresource string // health, diff, preview or sync
	namespace   string
	name        string
	render      string // ?render=REF
	revision    string // ?revision=REV
}

func (r request) path() string {
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/releases/%s/%s",
		subresourcesGroup, subresourcesv1alpha1.SchemeGroupVersion.Version, r.namespace, r.name, r.subresource)
}

// client calls convoy-apiserver through the kube-apiserver of the kubeconfig.
type client struct {
	rest      rest.Interface
	dynamic   dynamic.Interface
	namespace string
}

// client returns a client for the cluster and namespace of the flags.
func (o *Options) client() (*client, error) { return o.clientWithRate(0) }

// clientWithRate is client with a client-side rate limit of qps requests
// a second (bursts of twice that), client-go's default (5) when 0: a
// command that asks about many Releases at a time bounds itself with its
// --concurrency instead.
func (o *Options) clientWithRate(qps float32) (*client, error) {
	config, err := o.Flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	namespace, _, err := o.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	config = rest.CopyConfig(config)
	if qps > 0 {
		config.QPS, config.Burst = qps, int(2*qps)
	}
	if config.UserAgent == "" {
		config.UserAgent = rest.DefaultKubernetesUserAgent() // kubectl-convoy/VERSION (OS/ARCH) ...
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	config.APIPath = "/apis"
	config.GroupVersion = &subresourcesv1alpha1.SchemeGroupVersion
	config.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	restClient, err := rest.RESTClientFor(config)
	if err != nil {
		return nil, err
	}
	return &client{rest: restClient, dynamic: dyn, namespace: namespace}, nil
}

// callRelease checks the release argument and -o, then calls the subresource
// of req for that release in the namespace of the flags (see do). It returns
// the namespace and name of the release and the answer as the server sent it.
func (o *Options) callRelease(cmd *cobra.Command, args []string, output string, req request, body []byte, into any) (namespace, name string, raw []byte, err error) {
	if name, err = releaseName(cmd, args); err != nil {
		return "", "", nil, err
	}
	if err = checkOutput(output); err != nil {
		return "", "", nil, err
	}
	c, err := o.client()
	if err != nil {
		return "", "", nil, err
	}
	req.namespace, req.name = c.namespace, name
	raw, err = c.do(cmd.Context(), req, body, into)
	return c.namespace, name, raw, err
}

// do calls the subresource of req with body (POST) or without (GET), decodes
// the answer into into and returns it as the server sent it. A failed call
// is explained (see explain).
func (c *client) do(ctx context.Context, req request, body []byte, into any) ([]byte, error) {
	var r *rest.Request
	if body != nil {
		r = c.rest.Post().AbsPath(req.path()).SetHeader("Content-Type", "application/json").Body(body)
	} else {
		r = c.rest.Get().AbsPath(req.path())
	}
	if req.render != "" {
		r = r.Param("render", req.render)
	}
	if req.revision != "" {
		r = r.Param("revision", req.revision)
	}
	result := r.Do(ctx)
	raw, err := result.Raw()
	if err != nil {
		// Error, unlike Raw, decodes the Status the server sent.
		return nil, c.explain(ctx, req, result.Error())
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return nil, fmt.Errorf("decoding the answer of %s: %w", req.path(), err)
	}
	return raw, nil
}
