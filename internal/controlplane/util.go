package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kumodo/convoy-apiserver/pkg/cluster"
)

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errNotYet is what a poll condition returns while it keeps waiting, wrapping
// the reason that goes into the timeout error.
type errNotYet struct{ reason error }

func (e errNotYet) Error() string { return e.reason.Error() }
func (e errNotYet) Unwrap() error { return e.reason }

func notYet(format string, args ...any) error { return errNotYet{fmt.Errorf(format, args...)} }

// poll calls cond every interval until it returns nil, a permanent error (any
// error that is not from notYet), or timeout passes. The timeout error carries
// the last reason given by an attempt that ran to its end: an attempt cut
// short by the timeout itself (a Get in flight when the deadline passes) says
// only "context deadline exceeded", so it does not replace the reason before it.
func poll(ctx context.Context, timeout, interval time.Duration, what string, cond func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		var ny errNotYet
		if !errors.As(err, &ny) {
			return err
		}
		// A reason found when less than an interval was left is most
		// likely the deadline cutting the check short (client-go's rate
		// limiter refuses a wait past it, before the context is done):
		// it does not replace the reason found before.
		deadline, _ := ctx.Deadline()
		if last == nil || (ctx.Err() == nil && time.Until(deadline) > interval) {
			last = ny.reason
		}
		select {
		case <-ctx.Done():
			if parent := context.Cause(ctx); errors.Is(parent, context.Canceled) {
				return fmt.Errorf("waiting for %s: %w (last: %v)", what, parent, last)
			}
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last)
		case <-time.After(interval):
		}
	}
}

// credentials of one kubeconfig user.
type credentials struct {
	name            string
	certPEM, keyPEM []byte
	token           string
}

// writeKubeconfig writes a single-context kubeconfig and returns the matching
// rest.Config.
func writeKubeconfig(path, server string, caPEM []byte, cred credentials) (*rest.Config, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["convoy-local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[cred.name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cred.certPEM,
		ClientKeyData:         cred.keyPEM,
		Token:                 cred.token,
	}
	cfg.Contexts["convoy-local"] = &clientcmdapi.Context{Cluster: "convoy-local", AuthInfo: cred.name}
	cfg.CurrentContext = "convoy-local"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory of %s: %w", path, err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return &rest.Config{
		Host:            server,
		BearerToken:     cred.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM, CertData: cred.certPEM, KeyData: cred.keyPEM},
		QPS:             50,
		Burst:           100,
	}, nil
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeFileName(s string) string {
	s = unsafeFileChars.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		s = "_"
	}
	return s
}

// GrantServiceAccounts binds every ServiceAccount of namespace (the group
// system:serviceaccounts:NAMESPACE) to a Role that allows everything in it,
// as a tenant grants the identity of its Releases (see
// docs/users/identity.md, "What to grant a Release's ServiceAccount").
func (c *ControlPlane) GrantServiceAccounts(ctx context.Context, namespace string) error {
	cs, err := kubernetes.NewForConfig(c.kas.config)
	if err != nil {
		return err
	}
	const name = "release-identities"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Role %s/%s: %w", namespace, name, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + namespace}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RoleBinding %s/%s: %w", namespace, name, err)
	}
	return nil
}

// KubeAPIServerPID is the process id of the primary kube-apiserver.
func (c *ControlPlane) KubeAPIServerPID() int { return c.kas.proc.pid() }

// AllowImpersonation binds the ClusterRole convoy-apiserver:impersonate to
// convoy-apiserver's ServiceAccount in namespace, as a tenant namespace opts
// in (the recommended install: artifacts/rbac/convoy-apiserver.yaml), so
// that convoy-apiserver may act as the ServiceAccounts of namespace.
func (c *ControlPlane) AllowImpersonation(ctx context.Context, namespace string) error {
	cs, err := kubernetes.NewForConfig(c.kas.config)
	if err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cluster.ImpersonationClusterRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cluster.ImpersonationClusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: convoyName, Namespace: convoyNamespace}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RoleBinding %s/%s: %w", namespace, binding.Name, err)
	}
	return nil
}
