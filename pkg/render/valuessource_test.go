package render

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/failure"
	"github.com/kumodo/convoy-apiserver/pkg/source"
	"github.com/kumodo/convoy-apiserver/pkg/sourcefailure"
)

// teamValues is a values source as a Git commit's files come: a team's
// repository, its directory envs the values source's path.
func teamValues() *source.Source {
	src := dirSource(map[string]string{
		"envs/prod/values.yaml": "k1: team\nk2: team\nk3: team\n",
		"envs/big.yaml":         "k1: " + strings.Repeat("x", 2048) + "\n",
		"secret.yaml":           "k1: outside the path\n",
	}, "envs")
	src.Where = "https://git.example/team.git@0123456789abcdef0123456789abcdef01234567"
	src.Omitted = []string{"envs/huge.yaml"}
	src.Links = []string{"envs/linked"}
	return src
}

func renderWithValues(r *Renderer, rel *convoyv1alpha1.Release, src, vsrc *source.Source) ([]*unstructured.Unstructured, *failure.Error) {
	return r.render(withValuesSource(context.Background(), vsrc), rel, src)
}

// The files of both sources merge in the written order: a chart file, a
// values-source file, a chart file again, the later winning; an optional
// values-source file that is missing is skipped.
func TestValuesSourceOrder(t *testing.T) {
	files := layersChart(map[string]string{"values-prod.yaml": "k1: prod\nk2: prod\n", "env/extra.yaml": "k2: extra\n"})
	values := func(p string, optional bool) convoyv1alpha1.ValuesFile {
		return convoyv1alpha1.ValuesFile{Source: convoyv1alpha1.ValuesFileSourceValues, Path: p, Optional: optional}
	}
	r := newTestRenderer()
	for _, form := range chartForms {
		t.Run(form.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				files []convoyv1alpha1.ValuesFile
				want  map[string]any
			}{{
				name:  "chart, values, chart",
				files: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}, values("prod/values.yaml", false), {Source: convoyv1alpha1.ValuesFileSourceChart, Path: "env/extra.yaml"}},
				want:  map[string]any{"k1": "team", "k2": "extra", "k3": "team", "k4": "chart"},
			}, {
				name:  "values, then chart",
				files: []convoyv1alpha1.ValuesFile{values("./prod//values.yaml", false), {Path: "values-prod.yaml"}},
				want:  map[string]any{"k1": "prod", "k2": "prod", "k3": "team", "k4": "chart"},
			}, {
				name:  "an optional values file missing",
				files: []convoyv1alpha1.ValuesFile{{Path: "values-prod.yaml"}, values("staging/values.yaml", true)},
				want:  map[string]any{"k1": "prod", "k2": "prod", "k3": "chart", "k4": "chart"},
			}} {
				t.Run(tc.name, func(t *testing.T) {
					objs, err := renderWithValues(r, withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: tc.files}), form.source(t, files), teamValues())
					require.Nil(t, err)
					require.Len(t, objs, 1)
					data := objs[0].Object["data"].(map[string]any)
					for k, v := range tc.want {
						assert.Equal(t, v, data[k], k)
					}
				})
			}
		})
	}
}

// Every refusal of a values-source file names the file and
// spec.valuesSource.
func TestValuesSourceFileErrors(t *testing.T) {
	files := layersChart(nil)
	r := testEngine(Limits{MaxValuesFileBytes: 1024}).Renderer(source.ClientInputs{}, MapperScoper{Mapper: testMapper()})
	for _, tc := range []struct {
		name   string
		file   convoyv1alpha1.ValuesFile
		reason string
		says   []string
	}{
		{"missing", convoyv1alpha1.ValuesFile{Path: "staging/values.yaml"}, ReasonValuesNotFound, []string{"valuesFiles 0: spec.valuesSource https://git.example/team.git@", "path envs holds no file staging/values.yaml"}},
		{"leaving the path", convoyv1alpha1.ValuesFile{Path: "../secret.yaml"}, ReasonValuesInvalid, []string{"valuesFiles 0:", ".. element"}},
		{"leaving the path, optional", convoyv1alpha1.ValuesFile{Path: "../secret.yaml", Optional: true}, ReasonValuesInvalid, []string{".. element"}},
		{"absolute", convoyv1alpha1.ValuesFile{Path: "/secret.yaml"}, ReasonValuesInvalid, []string{"is absolute"}},
		{"too large", convoyv1alpha1.ValuesFile{Path: "big.yaml"}, ReasonValuesFileTooLarge, []string{"valuesFiles 0: big.yaml of spec.valuesSource", "more than the limit of 1024 (--max-values-file-bytes)"}},
		{"left out of the fetch", convoyv1alpha1.ValuesFile{Path: "huge.yaml", Optional: true}, sourcefailure.ReasonArtifactTooLarge, []string{"spec.valuesSource", "huge.yaml was left out"}},
		{"a link", convoyv1alpha1.ValuesFile{Path: "linked/values.yaml"}, failure.ReasonLinkUnsupported, []string{"spec.valuesSource", "linked/values.yaml is a link"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.file.Source = convoyv1alpha1.ValuesFileSourceValues
			objs, err := renderWithValues(r, withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{tc.file}}), chartForms[0].source(t, files), teamValues())
			require.NotNil(t, err, "objects: %v", keys(objs))
			assert.Equal(t, tc.reason, err.Reason, err.Message)
			for _, s := range tc.says {
				assert.Contains(t, err.Message, s)
			}
		})
	}

	// An unknown source, and values read with no values source fetched.
	_, err := renderWithValues(r, withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Source: "other", Path: "a.yaml"}}}), chartForms[0].source(t, files), nil)
	require.NotNil(t, err)
	assert.Equal(t, ReasonValuesInvalid, err.Reason, err.Message)
	_, err = renderWithValues(r, withContent(convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Source: "values", Path: "a.yaml"}}}), chartForms[0].source(t, files), nil)
	require.NotNil(t, err)
	assert.Equal(t, sourcefailure.ReasonSourceInvalid, err.Reason, err.Message)
}

// Render fetches the values source only when an entry reads it: a Release
// whose valuesFiles read none makes no request for it, even with
// spec.valuesSource set; one that reads it without spec.valuesSource is
// refused; a values source that fails names spec.valuesSource.
func TestRenderValuesSource(t *testing.T) {
	tgz := buildChart(t, "layers", layersChart(map[string]string{"values-prod.yaml": "k1: prod\n"}))
	client := fake.NewClientset(chartConfigMap("chart", tgz), configMap("team", map[string]string{"prod.yaml": "k1: team\nk3: team\n"}))
	r := newRendererOn(client, MapperScoper{Mapper: testMapper()})
	rel := func(vs *convoyv1alpha1.ValuesSource, files ...convoyv1alpha1.ValuesFile) *convoyv1alpha1.Release {
		return release("chart", func(s *convoyv1alpha1.ReleaseSpec) {
			s.ValuesSource = vs
			s.Content = &convoyv1alpha1.ReleaseContent{ValuesFiles: files}
		})
	}
	team := &convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "team"}}
	reads := func() []string {
		var names []string
		for _, a := range client.Actions() {
			if g, ok := a.(interface{ GetName() string }); ok && a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
				names = append(names, g.GetName())
			}
		}
		client.ClearActions()
		return names
	}

	out := renderOK(t, r, rel(team, convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"}))
	assert.Equal(t, []string{"chart"}, reads(), "no entry reads the values source: no request for it")
	assert.Equal(t, "prod", find(t, out, "ConfigMap", "layers").Object["data"].(map[string]any)["k1"])
	assert.Nil(t, out.ValuesResolved)
	renderOK(t, r, rel(nil, convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"}))
	assert.Equal(t, []string{"chart"}, reads(), "no values source: no request")

	out = renderOK(t, r, rel(team, convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"}, convoyv1alpha1.ValuesFile{Source: "values", Path: "prod.yaml"}))
	assert.Equal(t, []string{"chart", "team"}, reads())
	data := find(t, out, "ConfigMap", "layers").Object["data"].(map[string]any)
	assert.Equal(t, "team", data["k1"])
	assert.Equal(t, "team", data["k3"])

	ferr := renderErr(t, r, rel(nil, convoyv1alpha1.ValuesFile{Path: "values-prod.yaml"}, convoyv1alpha1.ValuesFile{Source: "values", Path: "prod.yaml"}), sourcefailure.ReasonSourceInvalid)
	assert.Equal(t, "valuesFiles 1 reads source values, but spec.valuesSource is not set", ferr.Message)

	ferr = renderErr(t, r, rel(&convoyv1alpha1.ValuesSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "absent"}}, convoyv1alpha1.ValuesFile{Source: "values", Path: "prod.yaml"}), sourcefailure.ReasonSourceNotFound)
	assert.Equal(t, "spec.valuesSource: source ConfigMap demo/absent not found", ferr.Message)
}

// A stored render of a Release that reads a values source asking for a
// signature is refused when its Secret names no revision of the values
// source to verify (AnnotationResolvedValuesSource). Without verify, or
// reading none of it, it is not; spec.source's VerifyRevision does not
// look at the values source.
func TestVerifyValuesRevisionWithoutRevision(t *testing.T) {
	r := newTestRenderer()
	keys := convoyv1alpha1.LocalObjectReference{Name: "keys"}
	rel := func(vs *convoyv1alpha1.ValuesSource, source string) *convoyv1alpha1.Release {
		return release("chart", func(s *convoyv1alpha1.ReleaseSpec) {
			s.ValuesSource = vs
			s.Content = &convoyv1alpha1.ReleaseContent{ValuesFiles: []convoyv1alpha1.ValuesFile{{Source: source, Path: "prod.yaml"}}}
		})
	}
	git := func(v *convoyv1alpha1.GitVerification) *convoyv1alpha1.ValuesSource {
		return &convoyv1alpha1.ValuesSource{Git: &convoyv1alpha1.GitRepositorySource{URL: "https://git.example/team.git", Ref: convoyv1alpha1.GitReference{Branch: "main"}, Verify: v}}
	}
	for _, tc := range []struct {
		name    string
		release *convoyv1alpha1.Release
		refused bool
	}{
		{"git verify", rel(git(&convoyv1alpha1.GitVerification{SecretRef: keys}), "values"), true},
		{"oci verify", rel(&convoyv1alpha1.ValuesSource{OCIRepository: &convoyv1alpha1.OCIRepositorySource{URL: "oci://r.example/v", Tag: "1",
			Verify: &convoyv1alpha1.OCIVerification{Provider: "cosign", SecretRef: &keys}}}, "values"), true},
		{"no verify", rel(git(nil), "values"), false},
		{"read by no entry", rel(git(&convoyv1alpha1.GitVerification{SecretRef: keys}), "chart"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sig, err := r.VerifyRevision(context.Background(), tc.release, nil)
			assert.Nil(t, sig)
			assert.NoError(t, err, "spec.source asks for no signature")
			sig, err = r.VerifyValuesRevision(context.Background(), tc.release, nil)
			assert.Nil(t, sig)
			if !tc.refused {
				assert.NoError(t, err)
				return
			}
			ferr, ok := failure.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, "SignatureUnverified", ferr.Reason)
			assert.Contains(t, ferr.Message, "spec.valuesSource")
			assert.Contains(t, ferr.Message, convoyv1alpha1.AnnotationResolvedValuesSource)
		})
	}
}
