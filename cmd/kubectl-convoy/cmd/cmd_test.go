package cmd

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
)

const (
	apiServicePath = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.subresources.convoy.kumodo.io"
	releasePath    = "/apis/subresources.convoy.kumodo.io/v1alpha1/namespaces/shop/releases/web/"
)

// answer is what the fake kube-apiserver writes for a path.
type answer struct {
	code        int
	contentType string
	body        string
}

func jsonAnswer(code int, v any) answer {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return answer{code: code, contentType: "application/json", body: string(b)}
}

func statusAnswer(err *apierrors.StatusError) answer {
	s := err.ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	return jsonAnswer(int(s.Code), s)
}

// apiService is an APIService whose Available condition has status, reason
// and message.
func apiService(status, reason, message string) answer {
	return jsonAnswer(http.StatusOK, map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.subresources.convoy.kumodo.io"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": reason, "message": message,
		}}},
	})
}

var (
	available    = apiService("True", "Passed", "all checks passed")
	notInstalled = statusAnswer(apierrors.NewNotFound(schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, "v1alpha1.subresources.convoy.kumodo.io"))
	// groupNotServed is what the kube-apiserver answers for a group it does not serve.
	groupNotServed = jsonAnswer(http.StatusNotFound, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource",
	})
	// proxyUnavailable is what the aggregator answers while the APIService is not Available.
	proxyUnavailable = answer{code: http.StatusServiceUnavailable, contentType: "text/plain", body: "service unavailable\n"}
	releaseNotFound  = statusAnswer(apierrors.NewNotFound(subresourcesv1alpha1.Resource("releases"), "web"))
)

// fakeServer is a kube-apiserver that answers the paths of answers and
// records the requests.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	// hook, when set before the first request, runs before each answer.
	hook func(*http.Request)
}

type recorded struct {
	method, path, query, body string
}

func newFakeServer(t *testing.T, answers map[string]answer) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.URL.RawQuery, string(body)})
		f.mu.Unlock()
		if f.hook != nil {
			f.hook(r)
		}
		a, ok := answers[r.URL.Path]
		if !ok {
			a = groupNotServed
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.code)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.requests...)
}

type result struct {
	stdout, stderr string
	code           int
}

// runPlugin runs the plugin with args against server, as kubectl-convoy
// would run, with an empty kubeconfig.
func runPlugin(t *testing.T, server string, args ...string) result {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, nil, 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	o := NewOptions(streams)
	o.Now = func() time.Time { return testNow }
	o.isTerminal = func(io.Writer) bool { return false }
	root := NewCommandWithOptions(o)
	root.SetArgs(append(args, "--server", server))
	code := Execute(context.Background(), root, errOut)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func diffAnswer(result subresourcesv1alpha1.DiffResult) answer {
	d := subresourcesv1alpha1.ReleaseDiff{
		TypeMeta:   metav1.TypeMeta{Kind: "ReleaseDiff", APIVersion: subresourcesv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		RenderRef:  "0123456789abcdef", RenderSource: subresourcesv1alpha1.RenderSourceFresh,
		Result: result,
	}
	switch result {
	case subresourcesv1alpha1.DiffDrifted:
		d.Objects = []subresourcesv1alpha1.ObjectDiff{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web",
			Status: subresourcesv1alpha1.ObjectModified, Changes: []subresourcesv1alpha1.FieldChange{
				{Path: "spec.replicas", Op: subresourcesv1alpha1.ChangeReplace, Desired: raw("2"), Live: raw("5")},
			}}}
	case subresourcesv1alpha1.DiffUndetermined:
		d.RenderRef, d.RenderSource = "", ""
		d.Reason, d.Message = "ClusterNotFound", `cluster "nowhere" not found`
	default:
		d.Objects = []subresourcesv1alpha1.ObjectDiff{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web",
			Status: subresourcesv1alpha1.ObjectInSync}}
	}
	return jsonAnswer(http.StatusOK, d)
}

func TestDiffExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		answers    map[string]answer
		args       []string
		code       int
		stdout     []string
		stderr     string
		wantRender string
	}{{
		name:    "in sync",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffInSync)},
		code:    0,
		stdout:  []string{"Release shop/web, render 0123456789abcdef (Fresh): InSync\nInSync   Deployment.apps   shop/web\n"},
	}, {
		name:    "drifted",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffDrifted)},
		code:    1,
		stdout:  []string{"Modified   Deployment.apps   shop/web", "--- live   apps/v1 Deployment shop/web\n+++ desired\n@@ spec.replicas @@\n-5\n+2\n"},
	}, {
		name:    "drifted, coloured always",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffDrifted)},
		args:    []string{"--color=always"},
		code:    1,
		stdout:  []string{"\x1b[31m-5\x1b[0m\n\x1b[32m+2\x1b[0m\n"},
	}, {
		name:    "drifted as json",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffDrifted)},
		args:    []string{"-o", "json"},
		code:    1,
		stdout:  []string{`"kind": "ReleaseDiff"`, `"result": "Drifted"`},
	}, {
		name:    "undetermined",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffUndetermined)},
		code:    2,
		stdout:  []string{"Release shop/web: Undetermined\n"},
		stderr:  "error: the diff of release shop/web is undetermined (ClusterNotFound): cluster \"nowhere\" not found\n",
	}, {
		name:    "undetermined as yaml",
		answers: map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffUndetermined)},
		args:    []string{"-o", "yaml"},
		code:    2,
		stdout:  []string{"result: Undetermined\n"},
		stderr:  "(ClusterNotFound)",
	}, {
		name:       "stored render",
		answers:    map[string]answer{releasePath + "diff": diffAnswer(subresourcesv1alpha1.DiffInSync)},
		args:       []string{"--render", "0123456789abcdef"},
		wantRender: "render=0123456789abcdef",
	}, {
		name: "render not stored",
		answers: map[string]answer{
			releasePath + "diff": statusAnswer(&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
				Details: &metav1.StatusDetails{Group: subresourcesv1alpha1.GroupName, Kind: "releases", Name: "web"},
				Message: "render 00000000deadbeef is not in the render store of release shop/web"}}),
			apiServicePath: available,
		},
		args:   []string{"--render", "00000000deadbeef"},
		code:   2,
		stderr: "error: render 00000000deadbeef is not in the render store of release shop/web\n",
	}, {
		name:    "not installed",
		answers: map[string]answer{apiServicePath: notInstalled},
		code:    2,
		stderr:  "error: convoy-apiserver is not installed in this cluster: the APIService v1alpha1.subresources.convoy.kumodo.io does not exist\n",
	}, {
		name:    "unknown output",
		answers: map[string]answer{},
		args:    []string{"-o", "xml"},
		code:    2,
		stderr:  `unknown output format "xml"`,
	}, {
		name:    "unknown colour",
		answers: map[string]answer{},
		args:    []string{"--color=sometimes"},
		code:    2,
		stderr:  `--color must be auto, always or never, not "sometimes"`,
	}, {
		name:    "unknown flag",
		answers: map[string]answer{},
		args:    []string{"--colour"},
		code:    2,
		stderr:  "unknown flag: --colour",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := newFakeServer(t, tt.answers)
			r := runPlugin(t, server.URL, append([]string{"release", "diff", "web", "-n", "shop"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			for _, s := range tt.stdout {
				assert.Contains(t, r.stdout, s)
			}
			if tt.stderr == "" {
				assert.Empty(t, r.stderr)
			} else {
				assert.Contains(t, r.stderr, tt.stderr)
			}
			if tt.wantRender != "" {
				requests := server.recorded()
				require.NotEmpty(t, requests)
				assert.Equal(t, releasePath+"diff", requests[0].path)
				assert.Equal(t, tt.wantRender, requests[0].query)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		answers map[string]answer
		stderr  string
	}{{
		name:    "APIService does not exist",
		answers: map[string]answer{apiServicePath: notInstalled},
		stderr:  "error: convoy-apiserver is not installed in this cluster: the APIService v1alpha1.subresources.convoy.kumodo.io does not exist\n",
	}, {
		name: "APIService not Available",
		answers: map[string]answer{
			releasePath + "health": proxyUnavailable,
			apiServicePath:         apiService("False", "MissingEndpoints", `endpoints for service/convoy-apiserver in "convoy-system" have no addresses with port name "https"`),
		},
		stderr: `error: convoy-apiserver is not available: the APIService v1alpha1.subresources.convoy.kumodo.io is not Available (MissingEndpoints): endpoints for service/convoy-apiserver in "convoy-system" have no addresses with port name "https"` + "\n",
	}, {
		name: "APIService without conditions",
		answers: map[string]answer{
			releasePath + "health": proxyUnavailable,
			apiServicePath:         jsonAnswer(200, map[string]any{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": map[string]any{"name": "v1alpha1.subresources.convoy.kumodo.io"}}),
		},
		stderr: "error: convoy-apiserver is not available: the APIService v1alpha1.subresources.convoy.kumodo.io has no Available condition yet\n",
	}, {
		name:    "release not found",
		answers: map[string]answer{releasePath + "health": releaseNotFound, apiServicePath: available},
		stderr:  "error: release shop/web not found\n",
	}, {
		name: "503 of convoy-apiserver itself",
		args: []string{"release", "preview", "web", "-n", "shop"},
		answers: map[string]answer{
			releasePath + "preview": statusAnswer(apierrors.NewServiceUnavailable("rendering release shop/web: reading configMap shop/web-manifests: timeout")),
			apiServicePath:          available,
		},
		stderr: "error: rendering release shop/web: reading configMap shop/web-manifests: timeout\n",
	}, {
		name: "APIService cannot be read",
		answers: map[string]answer{
			apiServicePath: statusAnswer(apierrors.NewForbidden(schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}, "v1alpha1.subresources.convoy.kumodo.io", nil)),
		},
		stderr: "error: the server could not find the requested resource\n",
	}, {
		name: "forbidden get",
		answers: map[string]answer{releasePath + "health": statusAnswer(apierrors.NewForbidden(
			schema.GroupResource{Group: subresourcesv1alpha1.GroupName, Resource: "releases/health"}, "web", nil))},
		stderr: "error: you need get on releases/health in subresources.convoy.kumodo.io (namespace shop) to read the health: ",
	}, {
		name: "forbidden create",
		args: []string{"release", "sync", "web", "-n", "shop"},
		answers: map[string]answer{releasePath + "sync": statusAnswer(apierrors.NewForbidden(
			schema.GroupResource{Group: subresourcesv1alpha1.GroupName, Resource: "releases/sync"}, "web", nil))},
		stderr: "error: you need create on releases/sync in subresources.convoy.kumodo.io (namespace shop) to request a sync: ",
	}, {
		name:    "render failed",
		args:    []string{"release", "preview", "web", "-n", "shop"},
		answers: map[string]answer{releasePath + "preview": statusAnswer(&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: "RenderFailed", Message: "rendering release shop/web failed (SourceNotFound): configMap shop/web-manifests not found"}})},
		stderr:  "error: rendering release shop/web failed (SourceNotFound): configMap shop/web-manifests not found\n",
	}, {
		name:   "no name",
		args:   []string{"release", "health", "-n", "shop"},
		stderr: "error: a release name is required\nSee 'kubectl convoy release health --help' for usage\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := newFakeServer(t, tt.answers)
			args := tt.args
			if args == nil {
				args = []string{"release", "health", "web", "-n", "shop"}
			}
			r := runPlugin(t, server.URL, args...)
			assert.Equal(t, 1, r.code)
			assert.Empty(t, r.stdout)
			if strings.HasSuffix(tt.stderr, "\n") {
				assert.Equal(t, tt.stderr, r.stderr)
			} else {
				assert.True(t, strings.HasPrefix(r.stderr, tt.stderr), "stderr %q", r.stderr)
			}
		})
	}
}

func TestCommandsOutput(t *testing.T) {
	at := metav1.NewMicroTime(testNow.Add(24 * time.Second))
	health := subresourcesv1alpha1.ReleaseHealth{
		TypeMeta:   metav1.TypeMeta{Kind: "ReleaseHealth", APIVersion: subresourcesv1alpha1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Healthy:    &metav1.Condition{Type: "Healthy", Status: metav1.ConditionTrue, Reason: "Healthy", Message: "all 1 resources healthy"},
		Entries:    []subresourcesv1alpha1.EntryHealth{entry("apps", "Deployment", "shop", "web", "Healthy")},
	}
	answers := map[string]answer{
		releasePath + "health": jsonAnswer(200, health),
		releasePath + "preview": jsonAnswer(200, map[string]any{
			"kind": "ReleasePreview", "apiVersion": "subresources.convoy.kumodo.io/v1alpha1",
			"metadata": map[string]any{"name": "web", "namespace": "shop"}, "renderRef": "0123456789abcdef", "renderSource": "Fresh",
			"objects": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings", "namespace": "shop"}}},
		}),
		releasePath + "sync": jsonAnswer(200, subresourcesv1alpha1.ReleaseSync{
			TypeMeta:   metav1.TypeMeta{Kind: "ReleaseSync", APIVersion: subresourcesv1alpha1.SchemeGroupVersion.String()},
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, RequestedAt: &at, RequestedBy: "alice",
		}),
	}
	tests := []struct {
		args   []string
		stdout string
		method string
		query  string
		body   string
	}{
		{args: []string{"health"}, method: "GET", stdout: `KIND              NAMESPACE   NAME   STATE     AGE   ASSESSED           MESSAGE
Deployment.apps   shop        web    Healthy   -     0123456789abcdef   -
Healthy: True (Healthy): all 1 resources healthy
`},
		{args: []string{"health", "-o", "yaml"}, method: "GET", stdout: "apiVersion: subresources.convoy.kumodo.io/v1alpha1\nentries:\n"},
		{args: []string{"preview", "--manifests"}, method: "GET", stdout: `# Release shop/web: 1 objects
# renderRef: 0123456789abcdef
# renderSource: Fresh
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
`},
		{args: []string{"preview", "-o", "json", "--render", "0123456789abcdef"}, method: "GET", query: "render=0123456789abcdef", stdout: "{\n    \"apiVersion\": \"subresources.convoy.kumodo.io/v1alpha1\",\n    \"kind\": \"ReleasePreview\",\n"},
		{args: []string{"preview"}, method: "GET", stdout: "KIND        NAMESPACE   NAME\nConfigMap   shop        settings\nRelease shop/web: render 0123456789abcdef (Fresh), 1 objects\n"},
		{args: []string{"preview", "-o", "yaml"}, method: "GET", stdout: "apiVersion: subresources.convoy.kumodo.io/v1alpha1\nkind: ReleasePreview\n"},
		{args: []string{"preview", "-o", "name"}, method: "GET", stdout: "releasepreview.subresources.convoy.kumodo.io/web\n"},
		{args: []string{"sync"}, method: "POST", body: "{}", stdout: "sync requested for release shop/web at 2026-11-30T03:00:24.000000Z\n"},
		{args: []string{"sync", "-o", "json"}, method: "POST", body: "{}", stdout: "{\n    \"kind\": \"ReleaseSync\",\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			server := newFakeServer(t, answers)
			args := append([]string{"release", tt.args[0], "web", "-n", "shop"}, tt.args[1:]...)
			r := runPlugin(t, server.URL, args...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.True(t, strings.HasPrefix(r.stdout, tt.stdout), "stdout:\n%s", r.stdout)
			requests := server.recorded()
			require.Len(t, requests, 1)
			assert.Equal(t, releasePath+tt.args[0], requests[0].path)
			assert.Equal(t, tt.method, requests[0].method)
			assert.Equal(t, tt.query, requests[0].query)
			assert.Equal(t, tt.body, requests[0].body)
		})
	}
}

func TestCompleteReleaseNames(t *testing.T) {
	server := newFakeServer(t, map[string]answer{
		"/apis/convoy.kumodo.io/v1alpha1/namespaces/shop/releases": jsonAnswer(200, map[string]any{
			"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "ReleaseList", "metadata": map[string]any{},
			"items": []any{
				map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "Release", "metadata": map[string]any{"name": "web", "namespace": "shop"}},
				map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "Release", "metadata": map[string]any{"name": "api", "namespace": "shop"}},
				map[string]any{"apiVersion": "convoy.kumodo.io/v1alpha1", "kind": "Release", "metadata": map[string]any{"name": "worker", "namespace": "shop"}},
			},
		}),
	})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"release", "health", "-n", "shop", ""}, "api\nweb\nworker\n:4\n"},
		{[]string{"release", "diff", "-n", "shop", "w"}, "web\nworker\n:4\n"},
		{[]string{"release", "sync", "-n", "shop", "web", ""}, ":4\n"},
		{[]string{"release", "diff", "web", "-n", "shop", "--color", ""}, "auto\nalways\nnever\n:4\n"},
		{[]string{"release", "preview", "web", "-n", "shop", "-o", ""}, "table\nwide\njson\nyaml\nname\n:4\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			kubeconfig := filepath.Join(t.TempDir(), "config")
			require.NoError(t, os.WriteFile(kubeconfig, nil, 0o600))
			t.Setenv("KUBECONFIG", kubeconfig)
			streams, _, out, errOut := genericiooptions.NewTestIOStreams()
			root := NewCommand(streams)
			// flags go before the word to complete
			args := append([]string{"__complete", "--server", server.URL}, tt.args...)
			root.SetArgs(args)
			require.Equal(t, 0, Execute(context.Background(), root, errOut), errOut.String())
			assert.True(t, strings.HasPrefix(out.String(), tt.want), "completions:\n%s", out.String())
		})
	}
}
