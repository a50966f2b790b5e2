//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCRDValidation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	release := func(spec string) string {
		return fmt.Sprintf("apiVersion: convoy.kumodo.io/v1alpha1\nkind: Release\nmetadata:\n  name: r\n  namespace: %s\nspec:\n%s", ns, spec)
	}
	receiver := func(spec string) string {
		return fmt.Sprintf("apiVersion: convoy.kumodo.io/v1alpha1\nkind: Receiver\nmetadata:\n  name: hook\n  namespace: %s\nspec:\n%s", ns, spec)
	}
	cases := []struct {
		name    string
		object  string
		wantErr string // empty: accepted
	}{
		{name: "valid release", object: release(`
  source: {configMap: {name: m}}
  syncPolicy: {automatic: {}, interval: 1m}
  healthAssessment:
    globalRuleSetSelector: {matchLabels: {convoy.kumodo.io/default: "true"}}
    localRuleSetSelector: {}
    deadline: 30s
  mutations:
  - target: {kind: Deployment, labelSelector: {matchExpressions: [{key: app, operator: In, values: [a]}]}}
    labels: {team: x}
  - jsonPatch: [{op: replace, path: /spec/replicas, value: 3}]`)},
		{name: "no source", object: release(`
  source: {}`), wantErr: "exactly one of configMap, helmRepository, ociRepository or git must be set"},
		{name: "two sources at once", object: release(`
  source:
    configMap: {name: m}
    ociRepository: {url: "oci://example.test/chart"}`), wantErr: "exactly one of configMap, helmRepository, ociRepository or git must be set"},
		{name: "bad selector operator", object: release(`
  source: {configMap: {name: m}}
  healthAssessment:
    globalRuleSetSelector: {matchExpressions: [{key: a, operator: Maybe, values: [b]}]}`), wantErr: `Unsupported value: "Maybe"`},
		{name: "selector In without values", object: release(`
  source: {configMap: {name: m}}
  healthAssessment:
    localRuleSetSelector: {matchExpressions: [{key: a, operator: In}]}`), wantErr: "values must be set for the operators In and NotIn, and only for them"},
		{name: "bad mutation target selector", object: release(`
  source: {configMap: {name: m}}
  mutations:
  - target: {labelSelector: {matchExpressions: [{key: a, operator: Exists, values: [b]}]}}
    labels: {a: b}`), wantErr: "values must be set for the operators In and NotIn, and only for them"},
		{name: "negative interval", object: release(`
  source: {configMap: {name: m}}
  syncPolicy: {interval: -5m}`), wantErr: "interval must be positive"},
		{name: "zero deadline", object: release(`
  source: {configMap: {name: m}}
  healthAssessment: {deadline: 0s}`), wantErr: "deadline must be positive"},
		{name: "two mutation kinds at once", object: release(`
  source: {configMap: {name: m}}
  mutations:
  - labels: {a: b}
    annotations: {c: d}`), wantErr: "exactly one of patch, jsonPatch, labels or annotations must be set"},
		{name: "bad pin", object: release(`
  source: {configMap: {name: m}}
  pin: {renderRef: not-a-ref}`), wantErr: "spec.pin.renderRef"},
		{name: "bad values kind", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFrom: [{kind: Pod, name: x}]}`), wantErr: "spec.content.valuesFrom[0].kind"},
		{name: "helm repository URL with a password", object: release(`
  source: {helmRepository: {url: "https://alice:s3cr3t@charts.example.test/stable", chart: web}}`),
			wantErr: "must not hold credentials (user:password@): use secretRef"},
		{name: "helm repository URL with a user", object: release(`
  source: {helmRepository: {url: "https://alice@charts.example.test", chart: web}}`),
			wantErr: "must not hold credentials (user:password@): use secretRef"},
		{name: "helm repository URL with @ in its path", object: release(`
  source: {helmRepository: {url: "https://charts.example.test/team@x/stable", chart: web}}`)},
		{name: "OCI repository URL with a password", object: release(`
  source: {ociRepository: {url: "oci://alice:s3cr3t@registry.example.test/charts/web", tag: "1"}}`),
			wantErr: "must not hold credentials (user:password@): use secretRef"},
		{name: "OCI repository URL without credentials", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test:5000/charts/web", tag: "1"}}`)},
		{name: "values files of the chart's directory", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, path: charts/web}}
  content: {valuesFiles: [{path: values-prod.yaml}, {path: ./env/staging.yaml, optional: true}]}`)},
		{name: "values file out of the chart's directory", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, path: charts/web}}
  content: {valuesFiles: [{path: ../../envs/prod.yaml}]}`), wantErr: "spec.content.valuesFiles[0].path: Invalid value: \"../../envs/prod.yaml\": must be relative to the chart's directory and within it"},
		{name: "values file by an absolute path", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFiles: [{path: /etc/passwd}]}`), wantErr: "must be relative to the chart's directory and within it"},
		{name: "values file without a path", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFiles: [{optional: true}]}`), wantErr: "spec.content.valuesFiles[0].path: Required value"},
		{name: "too many values files", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFiles: [` + strings.TrimSuffix(strings.Repeat("{path: v.yaml}, ", 17), ", ") + `]}`), wantErr: "must have at most 16 items"},
		{name: "verified OCI source", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, secretRef: {name: keys}}}}`)},
		{name: "verification by an unknown provider", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: notation, secretRef: {name: keys}}}}`), wantErr: `spec.source.ociRepository.verify.provider: Unsupported value: "notation"`},
		{name: "verification without keys", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign}}}`), wantErr: "exactly one of secretRef (public keys) and matchOIDCIdentity (keyless) is required"},
		{name: "keyless verification", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, matchOIDCIdentity: [{issuer: "https://token\\.actions\\.githubusercontent\\.com", subject: "https://github\\.com/o/r/.*"}], trustedRootSecretRef: {name: root}}}}`)},
		{name: "keyless verification with the public trust root", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, matchOIDCIdentity: [{issuer: i, subject: s}]}}}`)},
		{name: "keys and keyless at once", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, secretRef: {name: keys}, matchOIDCIdentity: [{issuer: i, subject: s}]}}}`), wantErr: "exactly one of secretRef (public keys) and matchOIDCIdentity (keyless) is required"},
		{name: "a trust root with keys", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, secretRef: {name: keys}, trustedRootSecretRef: {name: root}}}}`), wantErr: "trustedRootSecretRef is for keyless verification (matchOIDCIdentity)"},
		{name: "an identity without a subject", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, matchOIDCIdentity: [{issuer: i}]}}}`), wantErr: "matchOIDCIdentity[0].subject: Required value"},
		{name: "no identity", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", verify: {provider: cosign, matchOIDCIdentity: []}}}`), wantErr: "should have at least 1 items"},
		{name: "OCI repository path out of the bundle", object: release(`
  source: {ociRepository: {url: "oci://registry.example.test/b", tag: "1", path: "a/../../etc"}}`), wantErr: "must be relative to the bundle's root"},
		{name: "Git source", object: release(`
  source: {git: {url: "ssh://git@git.example.test:2222/apps.git", ref: {commit: "0123456789abcdef0123456789abcdef01234567", branch: main}, path: apps/web}}`)},
		{name: "Git URL with a password", object: release(`
  source: {git: {url: "https://bob:pw@git.example.test/apps.git", ref: {branch: main}}}`), wantErr: "must not hold credentials"},
		{name: "Git ssh URL with a password", object: release(`
  source: {git: {url: "ssh://git:pw@git.example.test/apps.git", ref: {branch: main}}}`), wantErr: "must not hold credentials"},
		{name: "Git ref of two kinds", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main, tag: v1}}}`), wantErr: "exactly one of branch, tag, semver or commit"},
		{name: "Git ref of no kind", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {}}}`), wantErr: "exactly one of branch, tag, semver or commit"},
		{name: "Git short commit", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {commit: abc123}}}`), wantErr: "spec.source.git.ref.commit"},
		{name: "Git file URL", object: release(`
  source: {git: {url: "file:///etc", ref: {branch: main}}}`), wantErr: "spec.source.git.url"},
		{name: "Git verify HEAD of a branch", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, verify: {secretRef: {name: keys}}}}`)},
		{name: "Git verify Tag of a tag", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {tag: v1.2.0}, verify: {mode: Tag, secretRef: {name: keys}}}}`)},
		{name: "Git verify TagAndHEAD of a semver range", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {semver: "~1.2"}, verify: {mode: TagAndHEAD, secretRef: {name: keys}}}}`)},
		{name: "Git verify Tag of a branch", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, verify: {mode: Tag, secretRef: {name: keys}}}}`),
			wantErr: "verify.mode Tag and TagAndHEAD verify an annotated tag: the ref must name a tag"},
		{name: "Git verify TagAndHEAD of a commit", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {commit: "0123456789abcdef0123456789abcdef01234567"}, verify: {mode: TagAndHEAD, secretRef: {name: keys}}}}`),
			wantErr: "verify.mode Tag and TagAndHEAD verify an annotated tag: the ref must name a tag"},
		{name: "Git verify of an unknown mode", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, verify: {mode: Branch, secretRef: {name: keys}}}}`),
			wantErr: "spec.source.git.verify.mode"},
		{name: "Git verify without a Secret", object: release(`
  source: {git: {url: "https://git.example.test/apps.git", ref: {branch: main}, verify: {mode: HEAD}}}`),
			wantErr: "spec.source.git.verify.secretRef"},
		{name: "Helm repository verify", object: release(`
  source: {helmRepository: {url: "https://charts.example.test", chart: web, verify: {provider: helm, secretRef: {name: keys}}}}`)},
		{name: "Helm repository verify by cosign", object: release(`
  source: {helmRepository: {url: "https://charts.example.test", chart: web, verify: {provider: cosign, secretRef: {name: keys}}}}`),
			wantErr: "spec.source.helmRepository.verify.provider"},
		{name: "values file of the values source without one", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFiles: [{path: a.yaml, source: values}]}`), wantErr: "a valuesFiles entry with source values requires spec.valuesSource"},
		{name: "values file of the values source", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {configMap: {name: team-values}}
  content: {valuesFiles: [{path: a.yaml, source: values}, {path: b.yaml, source: chart}, {path: c.yaml}]}`)},
		{name: "values file of an unknown source", object: release(`
  source: {configMap: {name: m}}
  content: {valuesFiles: [{path: a.yaml, source: other}]}`), wantErr: "spec.content.valuesFiles[0].source"},
		{name: "values source of no kind", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {}`), wantErr: "exactly one of configMap, ociRepository or git must be set"},
		{name: "values source of two kinds", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {configMap: {name: v}, git: {url: "https://git.example.test/values.git", ref: {branch: main}}}`), wantErr: "exactly one of configMap, ociRepository or git must be set"},
		{name: "values source path leaving its root", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {git: {url: "https://git.example.test/values.git", ref: {branch: main}, path: ../x}}`), wantErr: "spec.valuesSource.git.path"},
		{name: "values source URL with a password", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {git: {url: "https://bob:pw@git.example.test/values.git", ref: {branch: main}}}`), wantErr: "must not hold credentials"},
		{name: "values source verify Tag of a branch", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {git: {url: "https://git.example.test/values.git", ref: {branch: main}, verify: {mode: Tag, secretRef: {name: keys}}}}`),
			wantErr: "verify.mode Tag and TagAndHEAD verify an annotated tag"},
		{name: "values source OCI with tag and digest", object: release(`
  source: {configMap: {name: m}}
  valuesSource: {ociRepository: {url: "oci://registry.example.test/values", tag: v1, digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}}`),
			wantErr: "exactly one of tag and digest must be set"},
		{name: "rule set without rules", object: `apiVersion: convoy.kumodo.io/v1alpha1
kind: GlobalHealthRuleSet
metadata: {name: empty}
spec: {rules: []}`, wantErr: "spec.rules"},
		{name: "receiver", object: receiver(`
  type: github
  secretRef: {name: hook}
  releases: {matchLabels: {team: a}}
  events: [push]`)},
		{name: "receiver without secret", object: receiver(`
  type: github
  releases: {}`), wantErr: "secretRef is required: a Receiver accepts no delivery without a shared secret"},
		{name: "receiver with an empty secret name", object: receiver(`
  type: github
  secretRef: {name: ""}
  releases: {}`), wantErr: "spec.secretRef.name"},
		{name: "receiver of an unknown type", object: receiver(`
  type: bitbucket-cloud
  secretRef: {name: hook}
  releases: {}`), wantErr: "spec.type"},
		{name: "receiver without a selector", object: receiver(`
  type: gitlab
  secretRef: {name: hook}`), wantErr: "spec.releases"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := kubectl(t, "", tc.object, "create", "--dry-run=server", "-f", "-")
			if tc.wantErr == "" {
				require.NoError(t, r.err, r.stderr)
				return
			}
			require.Error(t, r.err, "accepted: %s", r.stdout)
			assert.Contains(t, r.stderr, tc.wantErr)
		})
	}
}

func TestCRDDefaults(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out := mustKubectl(t, "", fmt.Sprintf(`apiVersion: convoy.kumodo.io/v1alpha1
kind: Release
metadata: {name: r, namespace: %s}
spec:
  source: {configMap: {name: m}}
  content: {valuesFrom: [{kind: ConfigMap, name: v}]}
`, ns), "create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.syncPolicy.interval} {.spec.content.valuesFrom[0].key}")
	assert.Equal(t, "5m values.yaml", out)
}
