package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/ociregistry"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

func TestRenderErrors(t *testing.T) {
	chart := func(t *testing.T) []byte { return buildChart(t, "mychart", testChartFiles()) }
	valuesFrom := func(refs ...convoyv1alpha1.ValuesReference) func(*convoyv1alpha1.ReleaseSpec) {
		return func(s *convoyv1alpha1.ReleaseSpec) {
			s.Content = &convoyv1alpha1.ReleaseContent{ValuesFrom: refs}
		}
	}
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"

	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		release *convoyv1alpha1.Release
		reason  string
		message []string
		absent  []string // text the message must not hold
	}{
		{
			name:    "source ConfigMap missing",
			release: release("src"),
			reason:  sourcefailure.ReasonSourceNotFound,
			message: []string{"source ConfigMap demo/src not found"},
		},
		{
			// The default Fetcher refuses loopback: refused by the dialer,
			// before any packet.
			name: "helmRepository on a refused address",
			release: release("", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Source = convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: "https://127.0.0.1:1", Chart: "x"}}
			}),
			reason:  "AddressNotAllowed",
			message: []string{"https://127.0.0.1:1/index.yaml: the index", "connecting to 127.0.0.1:1 is not allowed"},
		},
		{
			name: "ociRepository on a refused address",
			release: release("", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Source = convoyv1alpha1.ReleaseSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://127.0.0.1:1/x", Tag: "1.0.0"}}
			}),
			reason:  "AddressNotAllowed",
			message: []string{"oci://127.0.0.1:1/x:1.0.0: resolving the tag", "connecting to 127.0.0.1:1 is not allowed"},
		},
		{
			name:    "no source",
			release: release("", func(s *convoyv1alpha1.ReleaseSpec) { s.Source = convoyv1alpha1.ReleaseSource{} }),
			reason:  sourcefailure.ReasonSourceInvalid,
			message: []string{"spec.source sets no source kind"},
		},
		{
			name: "two sources",
			release: release("src", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Source.OCIRepository = &convoyv1alpha1.OCIRepositorySource{URL: "oci://192.0.2.1/x"}
			}),
			reason:  sourcefailure.ReasonSourceInvalid,
			message: []string{"more than one source kind: configMap, ociRepository"},
		},
		{
			name: "ConfigMap with neither chart nor manifests",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("src", map[string]string{"README.md": "hi"})}
			},
			release: release("src"),
			reason:  sourcefailure.ReasonSourceInvalid,
			message: []string{"source ConfigMap demo/src holds neither binaryData chart.tgz, nor a kustomization, nor a data key ending .yaml, .yml or .json"},
		},
		{
			name: "source ConfigMap forbidden",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("src", map[string]string{"a.yaml": deploy})}
			},
			release: release("forbidden"),
			reason:  sourcefailure.ReasonInputForbidden,
			message: []string{"source ConfigMap demo/forbidden may not be read", "forbidden"},
		},
		{
			name:    "valuesFrom ConfigMap missing",
			objects: func(t *testing.T) []runtime.Object { return []runtime.Object{chartConfigMap("src", chart(t))} },
			release: release("src", valuesFrom(
				convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "gone", Optional: true},
				convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "gone"},
			)),
			reason:  ReasonValuesNotFound,
			message: []string{"valuesFrom 1: ConfigMap demo/gone not found"},
		},
		{
			name: "valuesFrom Secret key missing",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", chart(t)), secret("creds", map[string]string{"other.yaml": "a: b"})}
			},
			release: release("src", valuesFrom(convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "creds"})),
			reason:  ReasonValuesNotFound,
			message: []string{"valuesFrom 0: Secret demo/creds has no key values.yaml"},
		},
		{
			name: "valuesFrom Secret forbidden",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", chart(t))}
			},
			release: release("src", valuesFrom(convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "forbidden", Optional: true})),
			reason:  sourcefailure.ReasonInputForbidden,
			message: []string{"valuesFrom 0: Secret demo/forbidden may not be read"},
		},
		{
			name: "valuesFrom ConfigMap not YAML",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", chart(t)), configMap("vals", map[string]string{"v.yaml": "- a list\n- not a map\n"})}
			},
			release: release("src", valuesFrom(convoyv1alpha1.ValuesReference{Kind: "ConfigMap", Name: "vals", Key: "v.yaml"})),
			reason:  ReasonValuesInvalid,
			message: []string{"valuesFrom 0: ConfigMap demo/vals key v.yaml is not a YAML map of values", "cannot unmarshal"},
		},
		{
			name: "valuesFrom Secret not YAML keeps the data out of the message",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", chart(t)), secret("creds", map[string]string{"values.yaml": "hunter2-secret"})}
			},
			release: release("src", valuesFrom(convoyv1alpha1.ValuesReference{Kind: "Secret", Name: "creds"})),
			reason:  ReasonValuesInvalid,
			message: []string{"valuesFrom 0: Secret demo/creds key values.yaml", "details withheld"},
			absent:  []string{"hunter2"},
		},
		{
			name:    "valuesFrom of another kind",
			objects: func(t *testing.T) []runtime.Object { return []runtime.Object{chartConfigMap("src", chart(t))} },
			release: release("src", valuesFrom(convoyv1alpha1.ValuesReference{Kind: "Pod", Name: "x"})),
			reason:  ReasonValuesInvalid,
			message: []string{`valuesFrom 0: kind "Pod" is neither ConfigMap nor Secret`},
		},
		{
			name:    "inline values not a map",
			objects: func(t *testing.T) []runtime.Object { return []runtime.Object{chartConfigMap("src", chart(t))} },
			release: release("src", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Content = &convoyv1alpha1.ReleaseContent{Values: rawJSON(`[1, 2]`)}
			}),
			reason:  ReasonValuesInvalid,
			message: []string{"spec.content.values is not a map of values"},
		},
		{
			name: "document without a name, counted from 1",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"deploy.yaml": deploy + "---\napiVersion: v1\nkind: Service\nmetadata: {}\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key deploy.yaml document 2: v1 Service has no metadata.name"},
		},
		{
			name: "document without apiVersion",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": "kind: Service\nmetadata: {name: x}\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml document 1: object has no apiVersion"},
		},
		{
			name: "document without kind",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": "apiVersion: v1\nmetadata: {name: x}\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml document 1: object has no kind"},
		},
		{
			name: "bad apiVersion",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": "apiVersion: a/b/c\nkind: X\nmetadata: {name: x}\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml document 1: a/b/c X x"},
		},
		{
			name: "YAML that does not parse",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": deploy + "---\nkind: [\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml document 2: error converting YAML to JSON: yaml: line 1"},
		},
		{
			name: "JSON that does not parse",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.json": `{"apiVersion": `})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.json document 1"},
		},
		{
			// Not an empty document: a file of NUL bytes (a sparse file of
			// a bundle, say) would be a render of no objects.
			name: "file of NUL bytes",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": strings.Repeat("\x00", 4096)})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml: a NUL byte at offset 0: the file is not text, neither YAML nor JSON"},
		},
		{
			name: "chart with a sparse file of 1 TiB",
			objects: func(t *testing.T) []runtime.Object {
				tgz, err := ociregistry.SparseTarGz(ociregistry.SparsePAX01, "mychart/templates/big.yaml", 1<<40)
				require.NoError(t, err)
				return []runtime.Object{chartConfigMap("src", tgz)}
			},
			release: release("src"),
			reason:  sourcefailure.ReasonArtifactTooLarge,
			message: []string{"ConfigMap demo/src binaryData chart.tgz: the chart inflated is larger than the limit", "its file mychart/templates/big.yaml claims 1099511627776 bytes"},
		},
		{
			name: "chart with a sparse file",
			objects: func(t *testing.T) []runtime.Object {
				tgz, err := ociregistry.SparseTarGz(ociregistry.SparsePAX10, "mychart/templates/x.yaml", 4096)
				require.NoError(t, err)
				return []runtime.Object{chartConfigMap("src", tgz)}
			},
			release: release("src"),
			reason:  sourcefailure.ReasonArtifactUnsupported,
			message: []string{"ConfigMap demo/src binaryData chart.tgz: file mychart/templates/x.yaml of the chart is a sparse file, which is not supported"},
		},
		{
			name: "document that is not an object",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": "- a\n- b\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key a.yaml document 1: not an object but an array"},
		},
		{
			name: "List item without a name",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"l.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap}\n"})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"ConfigMap demo/app key l.yaml document 1: List item 2: v1 ConfigMap has no metadata.name"},
		},
		{
			name: "duplicate object across keys",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{
					"a.yaml": deploy,
					"b.yaml": "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web, namespace: demo}\n",
				})}
			},
			release: release("app"),
			reason:  ReasonManifestInvalid,
			message: []string{"duplicate object Deployment.apps demo/web"},
		},
		{
			name: "mutation",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{configMap("app", map[string]string{"a.yaml": deploy})}
			},
			release: release("app", func(s *convoyv1alpha1.ReleaseSpec) {
				s.Mutations = []convoyv1alpha1.Mutation{{JSONPatch: []convoyv1alpha1.JSONPatchOperation{{Op: "remove", Path: "/spec"}}}}
			}),
			reason:  ReasonMutationFailed,
			message: []string{"mutation 0 (jsonPatch) on Deployment.apps demo/web"},
		},
		{
			name: "chart",
			objects: func(*testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", []byte{0x1f, 0x8b, 0})}
			},
			release: release("src"),
			reason:  ReasonChartInvalid,
			message: []string{"ConfigMap demo/src binaryData chart.tgz is not a Helm chart"},
		},
		{
			name: "template",
			objects: func(t *testing.T) []runtime.Object {
				return []runtime.Object{chartConfigMap("src", buildChart(t, "mychart", withFiles(testChartFiles(), map[string]string{
					"templates/fail.yaml": `{{ fail "no way" }}`,
				})))}
			},
			release: release("src"),
			reason:  ReasonTemplateFailed,
			message: []string{"mychart/templates/fail.yaml", "no way"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.objects != nil {
				objs = tt.objects(t)
			}
			client := fake.NewClientset(objs...)
			client.PrependReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.(k8stesting.GetAction).GetName() == "forbidden" {
					return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "forbidden", errors.New("no access"))
				}
				return false, nil, nil
			})
			r := newRendererOn(client, MapperScoper{Mapper: testMapper()})
			rerr := renderErr(t, r, tt.release, tt.reason)
			for _, m := range tt.message {
				assert.Contains(t, rerr.Message, m)
			}
			for _, m := range tt.absent {
				assert.NotContains(t, rerr.Message, m)
				if rerr.Err != nil {
					assert.NotContains(t, rerr.Err.Error(), m)
				}
			}
			assert.Equal(t, rerr.Message, rerr.Error())
		})
	}
}

func TestErrorUnwraps(t *testing.T) {
	r := newTestRenderer()
	_, err := r.Render(context.Background(), release("src"))
	assert.True(t, apierrors.IsNotFound(err), "the NotFound of Inputs is wrapped: %v", err)
}

type failingScoper struct{ err error }

func (s failingScoper) IsNamespaced(schema.GroupVersionKind) (bool, error) { return false, s.err }

func TestScoperErrors(t *testing.T) {
	cm := configMap("src", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"})

	// An unknown kind keeps its namespace; a nil Scoper knows no kind.
	for _, s := range []Scoper{failingScoper{err: &metaNoMatch{}}, nil} {
		r := newRendererOn(fake.NewClientset(cm), s)
		out := renderOK(t, r, release("src"))
		assert.Equal(t, "", out.Objects[0].GetNamespace())
	}

	// Any other failure fails the render.
	r := newRendererOn(fake.NewClientset(cm), failingScoper{err: errors.New("discovery down")})
	rerr := renderErr(t, r, release("src"), sourcefailure.ReasonInputUnavailable)
	assert.Contains(t, rerr.Message, "scope of v1 ConfigMap: discovery down")
}

func TestRenderNilRelease(t *testing.T) {
	_, err := newTestRenderer().Render(context.Background(), nil)
	var rerr *failure.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, sourcefailure.ReasonSourceInvalid, rerr.Reason)
}

// metaNoMatch is a NoKindMatchError as a RESTMapper returns it.
type metaNoMatch = meta.NoKindMatchError
