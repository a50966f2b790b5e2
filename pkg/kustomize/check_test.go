package kustomize

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kumodo/convoy-apiserver/pkg/failure"
)

const where = "oci://registry.example/app@sha256:0"

func filesOf(m map[string]string) *Files {
	files := make(map[string][]byte, len(m))
	for k, v := range m {
		files[k] = []byte(v)
	}
	return NewFiles(files)
}

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"

// Check passes an overlay confined to the source and tells the directories
// kustomize reads; files elsewhere are not part of it.
func TestCheckPlansTheRootsReached(t *testing.T) {
	files := filesOf(map[string]string{
		"apps/web/base/kustomization.yaml":             "resources:\n- deploy.yaml\n",
		"apps/web/base/deploy.yaml":                    deployment,
		"apps/web/components/probe/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: probe.yaml\n",
		"apps/web/components/probe/probe.yaml":         deployment,
		"apps/web/overlays/prod/kustomization.yaml": `resources:
- ../../base
components:
- ../../components/probe
namePrefix: prod-
configMapGenerator:
- name: settings
  files:
  - app.properties
  - extra=more.properties
  envs:
  - env.txt
secretGenerator:
- name: creds
  literals:
  - password=s3cret
patches:
- path: replicas.yaml
- patch: |-
    - op: add
      path: /metadata/annotations
      value: {docs: "https://example.com/docs"}
  target: {kind: Deployment}
replacements:
- path: replace.yaml
commonAnnotations:
  runbook: https://example.com/runbook
transformers:
- |-
  apiVersion: builtin
  kind: PrefixSuffixTransformer
  metadata: {name: suffix}
  suffix: -v1
  fieldSpecs: [{path: metadata/name}]
`,
		"apps/web/overlays/prod/app.properties":  "a=b\n",
		"apps/web/overlays/prod/more.properties": "c=d\n",
		"apps/web/overlays/prod/env.txt":         "E=F\n",
		"apps/web/overlays/prod/replicas.yaml":   deployment,
		"apps/web/overlays/prod/replace.yaml":    "- source: {kind: ConfigMap, name: settings}\n  targets: []\n",
		"apps/other/kustomization.yaml":          "resources:\n- https://example.com/x.yaml\n",
	})
	plan, err := Check(where, files, "apps/web/overlays/prod", Limits{})
	require.NoError(t, err)
	assert.Equal(t, []string{"apps/web/base", "apps/web/components/probe", "apps/web/overlays/prod"}, plan.Roots)
	under := plan.Under(files)
	assert.Contains(t, under, "apps/web/base/deploy.yaml")
	assert.NotContains(t, under, "apps/other/kustomization.yaml")
}

// Every refusal, with its reason, before anything is built.
func TestCheckRefuses(t *testing.T) {
	k := func(body string) map[string]string {
		return map[string]string{"app/kustomization.yaml": body, "app/deploy.yaml": deployment}
	}
	with := func(m map[string]string, more map[string]string) map[string]string {
		for k, v := range more {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		limits  Limits
		reason  string
		message string
	}{
		{name: "resource URL", files: k("resources:\n- https://raw.example.com/app/deploy.yaml\n"),
			reason: ReasonKustomizeRemoteRefused, message: `resources "https://raw.example.com/app/deploy.yaml" is a URL`},
		{name: "remote base", files: k("resources:\n- github.com/example/app//base?ref=v1\n"),
			reason: ReasonKustomizeRemoteRefused, message: `resources "github.com/example/app//base?ref=v1" is not a file or directory of the source; kustomize would fetch it as a remote base`},
		{name: "git ssh base", files: k("resources:\n- git@github.com:example/app.git\n"),
			reason: ReasonKustomizeRemoteRefused, message: "kustomize would fetch it as a remote base"},
		{name: "missing component", files: k("components:\n- ../probe\n"),
			reason: ReasonKustomizeRemoteRefused, message: `components "../probe" is not a file or directory of the source`},
		{name: "deprecated bases", files: k("bases:\n- https://example.com/base\n"),
			reason: ReasonKustomizeRemoteRefused, message: `bases "https://example.com/base" is a URL`},
		{name: "leaves the root", files: k("resources:\n- ../../../etc\n"),
			reason: ReasonKustomizeRemoteRefused, message: `resources "../../../etc" leaves the source's root`},
		{name: "absolute", files: k("resources:\n- /etc/passwd\n"),
			reason: ReasonKustomizeRemoteRefused, message: `resources "/etc/passwd" leaves the source's root`},
		{name: "patch URL", files: k("resources: [deploy.yaml]\npatches:\n- path: http://127.0.0.1:1/patch.yaml\n"),
			reason: ReasonKustomizeRemoteRefused, message: `patches.path "http://127.0.0.1:1/patch.yaml" is a URL`},
		{name: "strategic merge patch URL", files: k("resources: [deploy.yaml]\npatchesStrategicMerge:\n- https://example.com/p.yaml\n"),
			reason: ReasonKustomizeRemoteRefused, message: `patchesStrategicMerge "https://example.com/p.yaml" is a URL`},
		{name: "generator file URL", files: k("configMapGenerator:\n- name: c\n  files:\n  - key=https://example.com/f\n"),
			reason: ReasonKustomizeRemoteRefused, message: `configMapGenerator.files "https://example.com/f" is a URL`},
		{name: "generator env URL", files: k("secretGenerator:\n- name: c\n  envs:\n  - https://example.com/env\n"),
			reason: ReasonKustomizeRemoteRefused, message: `secretGenerator.envs "https://example.com/env" is a URL`},
		{name: "crds URL", files: k("crds:\n- https://example.com/crd.json\n"),
			reason: ReasonKustomizeRemoteRefused, message: `crds "https://example.com/crd.json" is a URL`},
		{name: "openapi URL", files: k("openapi:\n  path: https://example.com/schema.json\n"),
			reason: ReasonKustomizeRemoteRefused, message: `openapi.path "https://example.com/schema.json" is a URL`},
		{name: "replacements URL", files: k("replacements:\n- path: https://example.com/r.yaml\n"),
			reason: ReasonKustomizeRemoteRefused, message: `replacements.path "https://example.com/r.yaml" is a URL`},
		{name: "builtin with a URL", files: k("transformers:\n- |-\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: https://example.com/p.yaml\n"),
			reason: ReasonKustomizeRemoteRefused, message: `names "https://example.com/p.yaml"`},
		{name: "helmCharts", files: k("helmCharts:\n- name: podinfo\n  repo: https://example.com/charts\n"),
			reason: ReasonKustomizePluginRefused, message: "inflates Helm charts (helmCharts)"},
		{name: "helmGlobals", files: k("helmGlobals:\n  chartHome: charts\n"),
			reason: ReasonKustomizePluginRefused, message: "inflates Helm charts"},
		{name: "builtin helm inflation", files: k("generators:\n- |-\n  apiVersion: builtin\n  kind: HelmChartInflationGenerator\n  metadata: {name: h}\n  chartName: podinfo\n"),
			reason: ReasonKustomizePluginRefused, message: "HelmChartInflationGenerator inflates a Helm chart"},
		{name: "exec plugin", files: with(k("generators:\n- gen.yaml\n"), map[string]string{"app/gen.yaml": "apiVersion: someteam.example.com/v1\nkind: SecretsFromVault\nmetadata: {name: v}\n"}),
			reason: ReasonKustomizePluginRefused, message: "someteam.example.com/v1 SecretsFromVault is a plugin"},
		{name: "container function", files: with(k("transformers:\n- fn.yaml\n"), map[string]string{"app/fn.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: example.com/fn}\n"}),
			reason: ReasonKustomizePluginRefused, message: "is a KRM function (config.kubernetes.io/function)"},
		{name: "exec function", files: k("validators:\n- |-\n  apiVersion: example.com/v1\n  kind: Check\n  metadata:\n    name: c\n    annotations:\n      config.k8s.io/function: 'exec: {path: /bin/sh}'\n"),
			reason: ReasonKustomizePluginRefused, message: "config.k8s.io/function"},
		{name: "plugins as a directory", files: with(k("transformers:\n- plugins\n"), map[string]string{"app/plugins/kustomization.yaml": "resources: []\n"}),
			reason: ReasonKustomizePluginRefused, message: `"plugins" is a directory`},
		{name: "missing patch", files: k("patches:\n- path: nope.yaml\n"),
			reason: ReasonKustomizeInvalid, message: `patches.path "nope.yaml" is not a file of the source under directory app`},
		{name: "does not parse", files: k("resources: {not: a list}\n"),
			reason: ReasonKustomizeInvalid, message: "app/kustomization.yaml"},
		{name: "unknown field", files: k("resourcez: [deploy.yaml]\n"),
			reason: ReasonKustomizeInvalid, message: "app/kustomization.yaml"},
		{name: "base without kustomization", files: with(k("resources:\n- ../base\n"), map[string]string{"base/deploy.yaml": deployment}),
			reason: ReasonKustomizeInvalid, message: "directory base holds no kustomization"},
		{name: "cycle", files: with(k("resources:\n- ../other\n"), map[string]string{"other/kustomization.yaml": "resources:\n- ../app\n"}),
			reason: ReasonKustomizeInvalid, message: "the kustomization of directory app names itself through its bases"},
		{name: "too deep", files: chain(5, 1), limits: Limits{MaxDepth: 3},
			reason: ReasonKustomizeTooLarge, message: "is nested more than 3 deep"},
		{name: "too many builds", files: chain(12, 2), limits: Limits{MaxBuilds: 1000},
			reason: ReasonKustomizeTooLarge, message: "builds more than 1000 kustomizations"},
		{name: "too many files", files: chain(5, 1), limits: Limits{MaxFiles: 3},
			reason: ReasonKustomizeTooLarge, message: "read more than 3 files"},
		{name: "too many bytes", files: k("resources: [deploy.yaml]\n# " + strings.Repeat("x", 100) + "\n"), limits: Limits{MaxBytes: 64},
			reason: ReasonKustomizeTooLarge, message: "read more than 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(where, filesOf(tc.files), "app", tc.limits)
			ferr, ok := failure.As(err)
			require.True(t, ok, "not a failure: %v", err)
			assert.Equal(t, tc.reason, ferr.Reason)
			assert.Contains(t, ferr.Message, tc.message)
			assert.True(t, strings.HasPrefix(ferr.Message, where+": "), ferr.Message)
		})
	}
}

// chain is an overlay "app" on a chain of n bases, each naming the next
// fan times.
func chain(n, fan int) map[string]string {
	files := map[string]string{}
	name := func(i int) string {
		if i == 0 {
			return "app"
		}
		return fmt.Sprintf("b%d", i)
	}
	for i := range n {
		var b strings.Builder
		b.WriteString("resources:\n")
		for range fan {
			fmt.Fprintf(&b, "- ../%s\n", name(i+1))
		}
		files[name(i)+"/kustomization.yaml"] = b.String()
	}
	files[name(n)+"/kustomization.yaml"] = "resources: [deploy.yaml]\n"
	files[name(n)+"/deploy.yaml"] = deployment
	return files
}

// A base named twice is walked once but counted as kustomize builds it.
func TestCheckCountsRepeatedBases(t *testing.T) {
	_, err := Check(where, filesOf(chain(8, 2)), "app", Limits{MaxBuilds: 511})
	require.NoError(t, err, "2^9-1 builds")
	_, err = Check(where, filesOf(chain(8, 2)), "app", Limits{MaxBuilds: 510})
	require.Error(t, err)
}

// A base left out of the source's files (over a limit of the source) is
// KustomizeTooLarge, not a remote base.
func TestCheckOmittedFiles(t *testing.T) {
	files := filesOf(map[string]string{"app/kustomization.yaml": "resources:\n- ../base\n"}).
		Omit([]string{"base/kustomization.yaml", "base/cm.yaml"})
	_, err := Check(where, files, "app", Limits{})
	ferr, ok := failure.As(err)
	require.True(t, ok, "not a failure: %v", err)
	assert.Equal(t, ReasonKustomizeTooLarge, ferr.Reason)
	assert.Contains(t, ferr.Message, `resources "../base" was left out of the source's files`)
}

// A base that is a link of the source, or under one, is LinkUnsupported,
// not a remote base.
func TestCheckLinks(t *testing.T) {
	for _, resource := range []string{"../base", "../base/cm.yaml"} {
		files := filesOf(map[string]string{"app/kustomization.yaml": "resources:\n- " + resource + "\n"}).Links([]string{"base"})
		_, err := Check(where, files, "app", Limits{})
		ferr, ok := failure.As(err)
		require.True(t, ok, "not a failure: %v", err)
		assert.Equal(t, failure.ReasonLinkUnsupported, ferr.Reason, resource)
		assert.Contains(t, ferr.Message, `resources "`+resource+`" names a link of the source (base), which is not followed`)
	}
}
