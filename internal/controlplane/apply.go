//go:build unix

package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// fieldManager is the server-side apply field manager of everything the
// control plane writes.
const fieldManager = "convoy-controlplane"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyDir applies the manifests of dir with `kubectl apply --server-side`.
func (c *ControlPlane) applyDir(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if _, err := c.run(ctx, c.Kubectl("apply", "--server-side", "--force-conflicts", "--field-manager="+fieldManager, "-f", dir)); err != nil {
		return fmt.Errorf("apply %s: %w", dir, err)
	}
	c.logf("applied %s", dir)
	return nil
}

// run runs a helper command, killing it when ctx ends, and returns its
// combined output; a failure carries the output.
func (c *ControlPlane) run(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			return out.Bytes(), fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(out.String()))
		}
		return out.Bytes(), nil
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-waited
		return out.Bytes(), fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), ctx.Err())
	}
}

// waitCRDsEstablished waits until every CRD of the cluster is Established,
// then drops kubectl's discovery cache so the next kubectl sees the new kinds.
func (c *ControlPlane) waitCRDsEstablished(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.kas.config)
	if err != nil {
		return err
	}
	err = poll(ctx, time.Minute, 200*time.Millisecond, "CRDs Established", func(ctx context.Context) error {
		list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return notYet("list CRDs: %w", err)
		}
		var pending []string
		for _, crd := range list.Items {
			if st, msg := condition(&crd, "Established"); st != "True" {
				pending = append(pending, fmt.Sprintf("%s (%s)", crd.GetName(), msg))
			}
		}
		if len(pending) > 0 {
			return notYet("not Established: %s", strings.Join(pending, ", "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(c.kubectlCacheDir()); err != nil {
		return fmt.Errorf("drop kubectl cache: %w", err)
	}
	return nil
}

// condition returns status and "reason: message" of the status condition of
// the given type, or "" and a note that it is missing.
func condition(obj *unstructured.Unstructured, condType string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, ci := range conds {
		cond, ok := ci.(map[string]any)
		if !ok || cond["type"] != condType {
			continue
		}
		s, _ := cond["status"].(string)
		r, _ := cond["reason"].(string)
		m, _ := cond["message"].(string)
		return s, fmt.Sprintf("%s=%s %s: %s", condType, s, r, m)
	}
	return "", "no " + condType + " condition yet"
}
