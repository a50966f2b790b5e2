//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	convoyv1alpha1 "github.com/kumodo/convoy-apiserver/apis/convoy/v1alpha1"
	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	convoyclient "github.com/kumodo/convoy-apiserver/pkg/generated/clientset/versioned"
	"github.com/kumodo/convoy-apiserver/pkg/source"
)

// TestLocalUp runs what `make run` runs, on a control plane of its own: it
// prints the KUBECONFIG line and three commands that work, the example
// Release goes round the whole loop with no command (loopOfTheExample), so
// does the one whose chart is in the local OCI registry (ociExample), and
// Ctrl-C stops every process it started.
func TestLocalUp(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "local-up")
	build := exec.Command("go", "build", "-o", bin, "./hack/local-up")
	build.Dir = env.root
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	dir := t.TempDir()
	cmd := exec.Command(bin, "--dir", dir, "--bin-dir", env.binDir,
		"--convoy-apiserver", env.convoyBin,
		"--crds", filepath.Join(env.root, "artifacts/crds"),
		"--manifests", filepath.Join(env.root, "artifacts/rbac")+","+filepath.Join(env.root, "artifacts/rules"),
		"--examples", filepath.Join(env.root, "artifacts/examples"),
		"--chart", filepath.Join(env.root, "artifacts/charts/web"),
		"--git-example", filepath.Join(env.root, "artifacts/examples/kustomize"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var mu sync.Mutex
	var printed strings.Builder
	ready := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			mu.Lock()
			printed.WriteString(s.Text() + "\n")
			mu.Unlock()
			if strings.Contains(s.Text(), "Press Ctrl-C") {
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-time.After(3 * time.Minute):
		t.Fatalf("local-up did not come up; stderr:\n%s", stderr.String())
	}
	mu.Lock()
	text := printed.String()
	mu.Unlock()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	assert.Contains(t, text, "export KUBECONFIG="+kubeconfig)
	commands := regexp.MustCompile(`(?m)^  kubectl (.*)$`).FindAllStringSubmatch(text, -1)
	require.Len(t, commands, 3, text)
	for _, c := range commands {
		line := "kubectl " + c[1]
		sh := exec.Command("bash", "-c", line)
		sh.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+env.binDir+":"+os.Getenv("PATH"))
		got, err := sh.CombinedOutput()
		require.NoError(t, err, "%s: %s", line, got)
	}
	r := kubectl(t, kubeconfig, "", "get", "release", "-n", "demo", "podinfo",
		"-o", `jsonpath={.metadata.annotations.convoy\.kumodo\.io/sync-requested-at}`)
	require.NoError(t, r.err, r.stderr)
	assert.NotEmpty(t, r.stdout, "the printed sync command recorded a request")

	loopOfTheExample(t, kubeconfig)
	assert.Contains(t, text, "An OCI registry serves the example chart at oci://127.0.0.1:")
	ociExample(t, kubeconfig)
	gitExample(t, kubeconfig)
	receiverExample(t, kubeconfig, text)

	pids := childPIDs(t, dir)
	require.NotEmpty(t, pids, "local-up runs etcd, kube-apiserver and convoy-apiserver")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), stderr.String())
	for _, pid := range pids {
		assert.NoError(t, waitGone(pid), "process %d outlived local-up", pid)
	}
}

// childPIDs lists the processes whose command line names dir.
func childPIDs(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitGone(pid int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if err == syscall.ESRCH {
			return nil
		}
		if time.Now().After(deadline) {
			return syscall.EEXIST
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loopOfTheExample follows the example Release of make run with no command
// from the user: the stand-in of convoy's controller applies it wave by wave,
// kwok makes its Pods Ready, the observer finds it InSync and Healthy; after
// kubectl scale it is Drifted, a sync is requested, the stand-in applies it
// again and it is InSync again.
func loopOfTheExample(t *testing.T, kubeconfig string) {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	convoy, err := convoyclient.NewForConfig(config)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	release := func(ctx context.Context) (*convoyv1alpha1.Release, error) {
		return convoy.ConvoyV1alpha1().Releases("demo").Get(ctx, "podinfo", metav1.GetOptions{})
	}
	condition := func(r *convoyv1alpha1.Release, typ string) string {
		c := meta.FindStatusCondition(r.Status.Conditions, typ)
		if c == nil || c.ObservedGeneration != r.Generation {
			return "none"
		}
		return string(c.Status) + "/" + c.Reason
	}
	wait := func(what string, timeout time.Duration, cond func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var last error
		for ctx.Err() == nil {
			if last = cond(ctx); last == nil {
				return
			}
			time.Sleep(time.Second)
		}
		require.NoError(t, last, "waiting for %s", what)
	}

	var applied string
	wait("the example applied, InSync and Healthy", 4*time.Minute, func(ctx context.Context) error {
		r, err := release(ctx)
		if err != nil {
			return err
		}
		st := r.Status
		if st.LastApplied == nil || st.LastHealthy == nil || st.Rollout == nil || st.Rollout.Phase != convoyv1alpha1.RolloutComplete ||
			condition(r, convoyv1alpha1.ConditionInSync) != "True/InSync" || condition(r, convoyv1alpha1.ConditionHealthy) != "True/Healthy" {
			return fmt.Errorf("status %+v, InSync %s, Healthy %s", st, condition(r, convoyv1alpha1.ConditionInSync), condition(r, convoyv1alpha1.ConditionHealthy))
		}
		applied = st.LastApplied.RenderRef
		return nil
	})
	r, err := release(context.Background())
	require.NoError(t, err)
	assert.Equal(t, applied, r.Status.LastHealthy.RenderRef)
	assert.Equal(t, int32(1), r.Status.Rollout.Wave, "two waves: 0 (Service), 1 (Deployment)")
	inv, err := convoy.ConvoyV1alpha1().ReleaseInventories("demo").Get(context.Background(), "podinfo", metav1.GetOptions{})
	require.NoError(t, err)
	waves := map[string]int32{}
	for _, e := range inv.Spec.Entries {
		waves[e.Kind] = e.Wave
	}
	assert.Equal(t, map[string]int32{"Service": 0, "Deployment": 1}, waves)
	d, err := kube.AppsV1().Deployments("demo").Get(context.Background(), "podinfo", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), d.Status.ReadyReplicas, "Pods made Ready by kwok")

	scaled := time.Now()
	r2 := kubectl(t, kubeconfig, "", "scale", "deployment", "podinfo", "-n", "demo", "--replicas=5")
	require.NoError(t, r2.err, r2.stderr)
	wait("Drifted after the scale", 2*time.Minute, func(ctx context.Context) error {
		r, err := release(ctx)
		if err != nil {
			return err
		}
		if got := condition(r, convoyv1alpha1.ConditionInSync); got != "False/Drifted" {
			return fmt.Errorf("InSync %s", got)
		}
		return nil
	})
	wait("healed: InSync again at 2 replicas", 2*time.Minute, func(ctx context.Context) error {
		r, err := release(ctx)
		if err != nil {
			return err
		}
		d, err := kube.AppsV1().Deployments("demo").Get(ctx, "podinfo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := condition(r, convoyv1alpha1.ConditionInSync); got != "True/InSync" || *d.Spec.Replicas != 2 {
			return fmt.Errorf("InSync %s, %d replicas", got, *d.Spec.Replicas)
		}
		return nil
	})
	t.Logf("self-heal took %s from kubectl scale to InSync again", time.Since(scaled).Round(time.Second))
}

// ociExample follows demo/web, the Release of make run whose chart is in
// the local OCI registry: applied by the stand-in, InSync and Healthy, its
// /diff names the tag and the digest it resolved to, and the signature
// local-up wrote and convoy-apiserver verified; and demo/web-keyless, the
// same chart verified by its keyless signature.
func ociExample(t *testing.T, kubeconfig string) {
	t.Helper()
	d := exampleGoesRound(t, kubeconfig, "web")
	assert.Equal(t, "1.0.0", d.ResolvedSource.Tag)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, d.ResolvedSource.Digest)
	assert.Contains(t, d.ResolvedSource.URL, "/charts/web")
	require.NotNil(t, d.ResolvedSource.Verified, "signed by local-up, verified")
	assert.Equal(t, "local-up.pub", d.ResolvedSource.Verified.Key)
	assert.Equal(t, "referrer", d.ResolvedSource.Verified.Layout)

	// demo/web-keyless: the same digest, signed keyless too.
	k := exampleGoesRound(t, kubeconfig, "web-keyless")
	assert.Equal(t, d.ResolvedSource.Digest, k.ResolvedSource.Digest)
	require.NotNil(t, k.ResolvedSource.Verified, "signed keyless by local-up, verified")
	assert.Equal(t, "https://token.actions.githubusercontent.com", k.ResolvedSource.Verified.Issuer)
	assert.Contains(t, k.ResolvedSource.Verified.Subject, "/.github/workflows/release.yaml@refs/tags/")
	assert.Equal(t, "tag", k.ResolvedSource.Verified.Layout)
}

// gitExample follows demo/podinfo-git, the Release of make run whose
// kustomize overlay is in the local Git repository (git http-backend):
// applied by the stand-in, InSync and Healthy, its /diff names the branch
// and the commit it resolved to; demo/web-git, the example chart's
// directory in the same repository with its values file;
// demo/podinfo-git-signed, its branch signed, verified; and
// demo/web-team-values, a registry chart with its values from the repository.
// receiverExample runs the lines local-up prints to sign and send a
// delivery to the Receiver demo/git-push, until the Receiver is Ready and
// answers 202, and checks that the Release demo/podinfo-git got the refresh.
func receiverExample(t *testing.T, kubeconfig, text string) {
	t.Helper()
	_, after, found := strings.Cut(text, "The Receiver demo/git-push")
	require.True(t, found, text)
	var script []string
	for _, line := range strings.Split(after, "\n")[1:] {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		script = append(script, strings.TrimSuffix(strings.TrimSpace(line), "\\"))
	}
	require.Len(t, script, 5, after)
	eventually(t, "the printed delivery answered 202", func(context.Context) error {
		sh := exec.Command("bash", "-euc", strings.Join(script[:3], "\n")+"\n"+script[3]+" "+script[4])
		sh.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+env.binDir+":"+os.Getenv("PATH"))
		got, err := sh.CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(got)), "202") {
			return fmt.Errorf("%v: %s", err, got)
		}
		return nil
	})
	eventually(t, "demo/podinfo-git has a refresh requested", func(context.Context) error {
		r := kubectl(t, kubeconfig, "", "get", "release", "-n", "demo", "podinfo-git",
			"-o", `jsonpath={.metadata.annotations.convoy\.kumodo\.io/refresh-requested-at}`)
		if r.err != nil || r.stdout == "" {
			return fmt.Errorf("no refresh-requested-at: %v %s", r.err, r.stderr)
		}
		return nil
	})
}

func gitExample(t *testing.T, kubeconfig string) {
	t.Helper()
	d := exampleGoesRound(t, kubeconfig, "podinfo-git")
	assert.Equal(t, source.KindGitRepository, d.ResolvedSource.Kind)
	assert.Equal(t, "refs/heads/main", d.ResolvedSource.Ref)
	assert.Regexp(t, `^[0-9a-f]{40}$`, d.ResolvedSource.Commit)
	assert.Contains(t, d.ResolvedSource.URL, "/podinfo.git")

	// The example chart's directory in the same repository, with its
	// values-prod.yaml (replicas: 3 over the chart's 2).
	d = exampleGoesRound(t, kubeconfig, "web-git")
	assert.Equal(t, "refs/heads/main", d.ResolvedSource.Ref)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(config)
	require.NoError(t, err)
	dep, err := kube.AppsV1().Deployments("demo").Get(context.Background(), "web-git", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), *dep.Spec.Replicas, "values-prod.yaml over the chart's values.yaml")

	// demo/web's chart from the registry, its values from the Git
	// repository's envs/prod/values.yaml (replicas: 1 over the chart's 2).
	d = exampleGoesRound(t, kubeconfig, "web-team-values")
	assert.Equal(t, "1.0.0", d.ResolvedSource.Tag)
	require.NotNil(t, d.ResolvedValuesSource, "the values source's revision")
	assert.Equal(t, source.KindGitRepository, d.ResolvedValuesSource.Kind)
	assert.Equal(t, "refs/heads/main", d.ResolvedValuesSource.Ref)
	assert.Regexp(t, `^[0-9a-f]{40}$`, d.ResolvedValuesSource.Commit)
	teamDep, err := kube.AppsV1().Deployments("demo").Get(context.Background(), "web-team-values", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *teamDep.Spec.Replicas, "envs/prod/values.yaml over the chart's values.yaml")

	// The branch signed, its tip signed with the SSH key make run made,
	// verified by the allowed_signers line of demo/git-signers.
	d = exampleGoesRound(t, kubeconfig, "podinfo-git-signed")
	assert.Equal(t, "refs/heads/signed", d.ResolvedSource.Ref)
	sig := d.ResolvedSource.Verified
	require.NotNil(t, sig, "a verified commit")
	assert.Equal(t, "git", sig.Provider)
	assert.Equal(t, "ssh", sig.Format)
	assert.Equal(t, "allowed_signers", sig.Key)
	assert.Equal(t, "ci@convoy.local", sig.Identity)
	assert.Equal(t, "commit", sig.Layout)
	assert.True(t, strings.HasPrefix(sig.Fingerprint, "SHA256:"), sig.Fingerprint)
}

// exampleGoesRound waits until the Release demo/NAME of make run was
// applied and is InSync and Healthy, and returns its /diff.
func exampleGoesRound(t *testing.T, kubeconfig, name string) subresourcesv1alpha1.ReleaseDiff {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	convoy, err := convoyclient.NewForConfig(config)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var last string
	for {
		r, err := convoy.ConvoyV1alpha1().Releases("demo").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		inSync, healthy := meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionInSync), meta.FindStatusCondition(r.Status.Conditions, convoyv1alpha1.ConditionHealthy)
		last = fmt.Sprintf("lastApplied %v, InSync %+v, Healthy %+v", r.Status.LastApplied, inSync, healthy)
		if r.Status.LastApplied != nil && inSync != nil && inSync.Reason == "InSync" && healthy != nil && healthy.Reason == "Healthy" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("demo/%s did not go round: %s", name, last)
		}
		time.Sleep(time.Second)
	}
	raw := kubectl(t, kubeconfig, "", "get", "--raw", subresourcesAPI+"/namespaces/demo/releases/"+name+"/diff")
	require.NoError(t, raw.err, raw.stderr)
	var d subresourcesv1alpha1.ReleaseDiff
	require.NoError(t, json.Unmarshal([]byte(raw.stdout), &d))
	require.NotNil(t, d.ResolvedSource, raw.stdout)
	return d
}
