package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"github.com/kumodo/convoy-apiserver/pkg/version"
)

// openAPIPath is the OpenAPI v3 document of the group that convoy-apiserver
// serves; its info.version is the build of convoy-apiserver, and every
// authenticated user may read it (kubectl explain does).
const openAPIPath = "/openapi/v3/apis/" + subresourcesGroup + "/v1alpha1"

// versions is what `kubectl convoy version` prints.
type versions struct {
	Client version.Info `json:"clientVersion"`
	// Server is convoy-apiserver's version, empty with --client or when it
	// cannot be read.
	Server string `json:"serverVersion,omitempty"`
	// Kubernetes is the version of the kube-apiserver of the kubeconfig.
	Kubernetes string `json:"kubernetesVersion,omitempty"`
}

func newVersionCommand(o *Options) *cobra.Command {
	var output string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the versions of kubectl-convoy, convoy-apiserver and Kubernetes",
		Long: `Print the version of kubectl-convoy and, unless --client is given, the version of
convoy-apiserver (read through the aggregator from the OpenAPI document of its group)
and of the cluster's kube-apiserver.`,
		Example: `  kubectl convoy version
  kubectl convoy version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != outputTable && output != outputJSON && output != outputYAML {
				return fmt.Errorf("unknown output format %q: use table, json or yaml", output)
			}
			v := versions{Client: version.Get()}
			var serverErr error
			if !clientOnly {
				v.Server, v.Kubernetes, serverErr = o.serverVersions(cmd)
			}
			if err := printVersions(o.Streams.Out, output, v); err != nil {
				return err
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print the client version only, without a request")
	cmd.Flags().StringVarP(&output, "output", "o", outputTable, "Output format: table (lines), json or yaml")
	return cmd
}

// serverVersions reads the versions of convoy-apiserver and kube-apiserver.
func (o *Options) serverVersions(cmd *cobra.Command) (convoy, kube string, err error) {
	config, err := o.Flags.ToRESTConfig()
	if err != nil {
		return "", "", err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return "", "", err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return "", "", fmt.Errorf("reading the version of the cluster: %w", err)
	}
	raw, err := dc.RESTClient().Get().AbsPath(openAPIPath).DoRaw(cmd.Context())
	if err != nil {
		return "", info.GitVersion, fmt.Errorf("reading the version of convoy-apiserver from %s (is the APIService %s Available?): %w", openAPIPath, apiServiceName, err)
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "", info.GitVersion, fmt.Errorf("decoding %s: %w", openAPIPath, err)
	}
	return doc.Info.Version, info.GitVersion, nil
}

// printVersions writes v as lines, JSON or YAML.
func printVersions(w io.Writer, output string, v versions) error {
	switch output {
	case outputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case outputYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if _, err := fmt.Fprintf(w, "Client Version: %s\n", v.Client); err != nil {
		return err
	}
	if v.Server != "" {
		if _, err := fmt.Fprintf(w, "convoy-apiserver Version: %s\n", cell(v.Server)); err != nil {
			return err
		}
	}
	if v.Kubernetes != "" {
		if _, err := fmt.Fprintf(w, "Kubernetes Version: %s\n", cell(v.Kubernetes)); err != nil {
			return err
		}
	}
	return nil
}
