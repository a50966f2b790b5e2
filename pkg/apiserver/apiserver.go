package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"

	subresourcesv1alpha1 "github.com/kumodo/convoy-apiserver/apis/subresources/v1alpha1"
	generatedopenapi "github.com/kumodo/convoy-apiserver/pkg/generated/openapi"
	"github.com/kumodo/convoy-apiserver/pkg/registry/release"
)

// Name is the name of the server in logs, OpenAPI and health checks.
const Name = "convoy-apiserver"

// ExtraConfig holds the engines the REST storage serves.
type ExtraConfig struct {
	Engines release.Engines
}

// Config is the configuration of convoy-apiserver.
type Config struct {
	Generic *genericapiserver.Config
	Extra   ExtraConfig
}

// NewConfig returns a Config with the codecs and the OpenAPI settings of the group.
func NewConfig() *Config {
	generic := genericapiserver.NewConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIConfig.Info.Title = "convoy"
	generic.OpenAPIConfig.Info.Version = subresourcesv1alpha1.SchemeGroupVersion.Version
	// Server-side apply and OpenAPI v3 discovery need the v3 config.
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIV3Config.Info.Title = "convoy"
	generic.OpenAPIV3Config.Info.Version = subresourcesv1alpha1.SchemeGroupVersion.Version
	return &Config{Generic: generic}
}

// Server is a running convoy-apiserver.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server and installs subresources.convoy.kumodo.io/v1alpha1.
func (c *Config) New() (*Server, error) {
	if e := c.Extra.Engines; e.Releases == nil || e.Inventories == nil || e.Targets == nil || e.Checker == nil || e.Redactor == nil || e.Requester == nil {
		return nil, fmt.Errorf("every engine of the REST storage is required")
	}
	generic, err := c.Generic.Complete(nil).New(Name, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(subresourcesv1alpha1.GroupName, Scheme, runtime.NewParameterCodec(Scheme), Codecs)
	group.VersionedResourcesStorageMap[subresourcesv1alpha1.SchemeGroupVersion.Version] = release.Storage(c.Extra.Engines)
	if err := generic.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("installing API group %s: %w", subresourcesv1alpha1.GroupName, err)
	}
	return &Server{GenericAPIServer: generic}, nil
}
