#!/usr/bin/env bash
# Generates deepcopy, OpenAPI (with model names), the clientset, listers,
# informers and apply configurations (k8s.io/code-generator, version from
# go.mod), the CRD manifests in artifacts/crds (controller-gen) and the
# reference pages in docs/reference (hack/gen-docs).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

CONTROLLER_TOOLS_VERSION=v0.23.0
THIS_PKG=github.com/kumodo/convoy-apiserver
boilerplate="$root/hack/boilerplate.go.txt"

# go list -m does not download; on an empty module cache the module must be
# fetched first (go mod download is a no-op when it is there).
go mod download k8s.io/code-generator
codegen_dir=$(go list -m -f "{{.Dir}}" k8s.io/code-generator)
# shellcheck source=/dev/null
source "$codegen_dir/kube_codegen.sh"

kube::codegen::gen_helpers --boilerplate "$boilerplate" "$root/apis"

kube::codegen::gen_openapi \
  --output-dir "$root/pkg/generated/openapi" \
  --output-pkg "$THIS_PKG/pkg/generated/openapi" \
  --output-model-name-file zz_generated.model_name.go \
  --report-filename "$root/hack/api-rules-violations.list" \
  --update-report \
  --boilerplate "$boilerplate" \
  "$root/apis"

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --applyconfig-openapi-schema <(go run ./pkg/generated/openapi/cmd/models-schema) \
  --output-dir "$root/pkg/generated" \
  --output-pkg "$THIS_PKG/pkg/generated" \
  --boilerplate "$boilerplate" \
  "$root/apis"

rm -rf "$root/artifacts/crds"
go run "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION" \
  crd:crdVersions=v1 \
  paths="./apis/convoy/..." \
  output:crd:artifacts:config=artifacts/crds

# The default rule sets, from their source (artifacts/rules/source).
go run ./hack/gen-rules

# kustomize refuses files outside a kustomization's directory, so
# artifacts/deploy keeps copies of the CRDs, the server's RBAC and the default
# rule sets; they are generated here like the rest.
for dir in crds rbac rules; do
  rm -rf "artifacts/deploy/base/copies/$dir"
  mkdir -p "artifacts/deploy/base/copies/$dir"
  cp artifacts/$dir/*.yaml "artifacts/deploy/base/copies/$dir/"
done

# The reference pages docs/reference/{flags,reasons,metrics}.md, from the
# code; the generator overwrites them and leaves other files alone.
go run ./hack/gen-docs

# The Helm chart holds the same CRDs (crds/, which Helm installs first) and,
# under files/, the default rule sets and the user roles its templates
# include: copies too, so that the chart and the kustomize install cannot
# drift apart.
chart=artifacts/charts/convoy-apiserver
rm -rf "$chart/crds" "$chart/files/rules" "$chart/files/monitoring"
mkdir -p "$chart/crds" "$chart/files/rules" "$chart/files/monitoring"
cp artifacts/crds/*.yaml "$chart/crds/"
cp artifacts/rules/*.yaml "$chart/files/rules/"
cp artifacts/deploy/base/user-roles.yaml "$chart/files/user-roles.yaml"
cp artifacts/monitoring/prometheusrule.yaml "$chart/files/monitoring/"

# The metric names the monitoring artifacts use, each expression checked with
# Prometheus's own parser (hack/tools/promql, a module of its own).
(cd hack/tools/promql && go run . \
  -rules "$root/artifacts/monitoring/prometheusrule.yaml" \
  -dashboard "$root/artifacts/monitoring/dashboard.json" \
  -names "$root/artifacts/monitoring/metric-names.txt")
