package cmd

import (
	"context"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/dynamic"
)

// completionTimeout bounds the list calls of shell completion.
const completionTimeout = 5 * time.Second

// completeReleaseNames completes the NAME of a release command with the
// Releases (releases.convoy.kumodo.io) of the namespace.
func (o *Options) completeReleaseNames(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	namespace, _, err := o.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	return o.completeNames(cmd.Context(), releasesGVR, namespace, toComplete)
}

// completeNames lists the objects of resource in namespace whose name
// starts with prefix.
func (o *Options) completeNames(ctx context.Context, resource schema.GroupVersionResource, namespace, prefix string) ([]string, cobra.ShellCompDirective) {
	config, err := o.Flags.ToRESTConfig()
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveError
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	ri := dyn.Resource(resource)
	var lister dynamic.ResourceInterface = ri
	if namespace != "" {
		lister = ri.Namespace(namespace)
	}
	objs, err := lister.List(ctx, metav1.ListOptions{})
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, item := range objs.Items {
		if strings.HasPrefix(item.GetName(), prefix) {
			names = append(names, item.GetName())
		}
	}
	sort.Strings(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}

// registerFlagCompletion completes --namespace with the namespaces and
// --context, --cluster and --user with the kubeconfig's.
func registerFlagCompletion(root *cobra.Command, o *Options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return o.completeNames(cmd.Context(), namespacesGVR, "", toComplete)
	})
	fromKubeconfig := func(names func() []string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			for _, n := range names() {
				if strings.HasPrefix(n, toComplete) {
					out = append(out, n)
				}
			}
			sort.Strings(out)
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	rawConfig := func() (contexts, clusters, users []string) {
		c, err := o.Flags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, nil, nil
		}
		for n := range c.Contexts {
			contexts = append(contexts, n)
		}
		for n := range c.Clusters {
			clusters = append(clusters, n)
		}
		for n := range c.AuthInfos {
			users = append(users, n)
		}
		return contexts, clusters, users
	}
	_ = root.RegisterFlagCompletionFunc("context", fromKubeconfig(func() []string { c, _, _ := rawConfig(); return c }))
	_ = root.RegisterFlagCompletionFunc("cluster", fromKubeconfig(func() []string { _, c, _ := rawConfig(); return c }))
	_ = root.RegisterFlagCompletionFunc("user", fromKubeconfig(func() []string { _, _, u := rawConfig(); return u }))
}

// allowsColor says whether w is a terminal that takes colour (not TERM=dumb,
// no NO_COLOR), as kubectl decides.
func allowsColor(w io.Writer) bool {
	return printers.AllowsColorOutput(w)
}
