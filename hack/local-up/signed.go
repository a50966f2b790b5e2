package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	"github.com/kumodo/convoy-apiserver/internal/controlplane"
	"github.com/kumodo/convoy-apiserver/internal/gitserver"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
)

// signedPrincipal names the SSH key of make run's signed Git example in
// its allowed_signers line.
const signedPrincipal = "ci@convoy.local"

// signedOverlay renders overlays/prod again under other names, so that the
// signed example's objects are not podinfo-git's.
const signedOverlay = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../prod\nnamePrefix: signed-\n"

// signedGitRelease signs the branch signed of repo (signBranch), keeps the
// public key in the Secret demo/git-signers (key allowed_signers) and
// creates demo/podinfo-git-signed: base's spec on that branch and overlay,
// verified in mode HEAD.
func signedGitRelease(ctx context.Context, cp *controlplane.ControlPlane, convoy convoyclient.Interface, repo *gitserver.Repo, tree gitserver.Tree, base *convoyv1alpha1.Release) error {
	signed, allowedSigners, err := signBranch(ctx, repo, tree)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		return err
	}
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "git-signers"},
		Data: map[string][]byte{"allowed_signers": allowedSigners}}
	if _, err := kube.CoreV1().Secrets("demo").Create(ctx, keys, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Secret demo/git-signers: %w", err)
	}
	release := base.DeepCopy()
	release.ObjectMeta = metav1.ObjectMeta{Namespace: "demo", Name: "podinfo-git-signed"}
	release.Spec.Source.Git.Ref = convoyv1alpha1.GitReference{Branch: "signed"}
	release.Spec.Source.Git.Path = "overlays/signed"
	release.Spec.Source.Git.Verify = &convoyv1alpha1.GitVerification{Mode: "HEAD", SecretRef: convoyv1alpha1.LocalObjectReference{Name: keys.Name}}
	if _, err := convoy.ConvoyV1alpha1().Releases("demo").Create(ctx, release, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Release demo/podinfo-git-signed: %w", err)
	}
	fmt.Fprintf(os.Stderr, "local-up: signed the branch signed (commit %s) with an SSH key of this run and created the Release demo/podinfo-git-signed\n", signed)
	return nil
}

// signBranch commits tree and overlays/signed to the branch signed of repo,
// then a commit of the same tree on top, signed as `git -c gpg.format=ssh -c
// user.signingkey=KEY commit -S` signs, with an ed25519 key made for this
// run (ssh-keygen; the private key is removed after). It returns the signed
// commit and the allowed_signers line of the key.
func signBranch(ctx context.Context, repo *gitserver.Repo, tree gitserver.Tree) (string, []byte, error) {
	files := maps.Clone(tree.Files)
	files["overlays/signed/kustomization.yaml"] = signedOverlay
	tree.Files = files
	unsigned, err := repo.Commit("signed", tree, "the kustomize example, overlays/signed")
	if err != nil {
		return "", nil, fmt.Errorf("committing the signed Git example: %w", err)
	}
	keyDir, err := os.MkdirTemp("", "local-up-git-signing-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(keyDir)
	key := filepath.Join(keyDir, "id_ed25519")
	if out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", signedPrincipal, "-f", key).CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("ssh-keygen: %w: %s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		return "", nil, err
	}
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", repo.Dir, "-c", "gpg.format=ssh", "-c", "user.signingkey=" + key}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=CI", "GIT_AUTHOR_EMAIL="+signedPrincipal, "GIT_COMMITTER_NAME=CI", "GIT_COMMITTER_EMAIL="+signedPrincipal)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	signed, err := git("commit-tree", "-S", "-p", unsigned, "-m", "signed by "+signedPrincipal+" (make run)", unsigned+"^{tree}")
	if err != nil {
		return "", nil, err
	}
	if _, err := git("update-ref", "refs/heads/signed", signed, unsigned); err != nil {
		return "", nil, err
	}
	return signed, []byte(signedPrincipal + " " + string(pub)), nil
}
