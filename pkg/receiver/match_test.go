package receiver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/pkg/webhook"
)

func TestConcerns(t *testing.T) {
	const repo = "https://git.example.com/org/app"
	git := func(ref convoyv1alpha1.GitReference) convoyv1alpha1.ReleaseSource {
		return convoyv1alpha1.ReleaseSource{Git: gitSource(repo, ref)}
	}
	oci := func(tag, digest string) *convoyv1alpha1.OCIRepositorySource {
		return &convoyv1alpha1.OCIRepositorySource{URL: "oci://registry.example.com/proj/chart", Tag: tag, Digest: digest}
	}
	digest := "sha256:" + strings.Repeat("a", 64)
	branchPush := webhook.Delivery{Repositories: []string{"git@git.example.com:org/app.git"}, Refs: []string{"refs/heads/main"}}
	tagPush := webhook.Delivery{Repositories: []string{repo + ".git"}, Refs: []string{"refs/tags/v1.2.0"}}
	ociPush := webhook.Delivery{Repositories: []string{"registry.example.com/proj/chart"}, Tags: []string{"1.2.0"}}
	cases := []struct {
		name   string
		d      webhook.Delivery
		source convoyv1alpha1.ReleaseSource
		values *convoyv1alpha1.ValuesSource
		want   bool
	}{
		{"git branch: its branch", branchPush, git(convoyv1alpha1.GitReference{Branch: "main"}), nil, true},
		{"git branch: another branch", branchPush, git(convoyv1alpha1.GitReference{Branch: "dev"}), nil, false},
		{"git branch: a tag of its name", webhook.Delivery{Repositories: []string{repo}, Refs: []string{"refs/tags/main"}}, git(convoyv1alpha1.GitReference{Branch: "main"}), nil, false},
		{"git tag: its tag", tagPush, git(convoyv1alpha1.GitReference{Tag: "v1.2.0"}), nil, true},
		{"git tag: another tag", tagPush, git(convoyv1alpha1.GitReference{Tag: "v1.1.0"}), nil, false},
		{"git semver: any ref", tagPush, git(convoyv1alpha1.GitReference{SemVer: "~1.2"}), nil, true},
		{"git semver: another repository", webhook.Delivery{Repositories: []string{"https://git.example.com/org/lib"}, Refs: []string{"refs/tags/v1.2.0"}},
			git(convoyv1alpha1.GitReference{SemVer: "~1.2"}), nil, false},
		{"git commit: pinned", branchPush, git(convoyv1alpha1.GitReference{Commit: strings.Repeat("0", 40)}), nil, false},
		{"git commit of a branch: pinned", branchPush, git(convoyv1alpha1.GitReference{Branch: "main", Commit: strings.Repeat("0", 40)}), nil, false},
		{"git without a ref", branchPush, git(convoyv1alpha1.GitReference{}), nil, false},
		{"values git branch", branchPush, convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "x"}},
			&convoyv1alpha1.ValuesSource{Git: gitSource(repo, convoyv1alpha1.GitReference{Branch: "main"})}, true},
		{"values git commit", branchPush, convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "x"}},
			&convoyv1alpha1.ValuesSource{Git: gitSource(repo, convoyv1alpha1.GitReference{Commit: strings.Repeat("0", 40)})}, false},
		{"oci tag: its tag", ociPush, convoyv1alpha1.ReleaseSource{OCIRepository: oci("1.2.0", "")}, nil, true},
		{"oci tag: another tag", ociPush, convoyv1alpha1.ReleaseSource{OCIRepository: oci("1.1.0", "")}, nil, false},
		{"oci digest: pinned", ociPush, convoyv1alpha1.ReleaseSource{OCIRepository: oci("", digest)}, nil, false},
		{"values oci tag", ociPush, convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "x"}},
			&convoyv1alpha1.ValuesSource{OCIRepository: oci("1.2.0", "")}, true},
		{"values oci digest", ociPush, convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "x"}},
			&convoyv1alpha1.ValuesSource{OCIRepository: oci("", digest)}, false},
		{"oci: a push of another repository", branchPush, convoyv1alpha1.ReleaseSource{OCIRepository: oci("main", "")}, nil, false},
		{"configMap: never", branchPush, convoyv1alpha1.ReleaseSource{ConfigMap: &convoyv1alpha1.ConfigMapSource{Name: "app"}}, nil, false},
		{"helmRepository: never", webhook.Delivery{Repositories: []string{"https://charts.example.com"}, Refs: []string{"refs/heads/main"}},
			convoyv1alpha1.ReleaseSource{HelmRepository: &convoyv1alpha1.HelmRepositorySource{URL: "https://charts.example.com"}}, nil, false},
		{"a ping: never", webhook.Delivery{Ping: true, Repositories: branchPush.Repositories, Refs: branchPush.Refs}, git(convoyv1alpha1.GitReference{Branch: "main"}), nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rel := release("ns", "r", c.source, c.values, nil)
			assert.Equal(t, c.want, concerns(c.d, &rel))
		})
	}
}
