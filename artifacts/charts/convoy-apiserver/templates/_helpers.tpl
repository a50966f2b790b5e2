{{/*
The names of convoy-apiserver's objects are fixed, as in the kustomize
install: the APIService v1alpha1.subresources.convoy.kumodo.io and the
cluster-scoped RBAC exist once per cluster, so one release per cluster.
*/}}
{{- define "convoy.name" -}}convoy-apiserver{{- end }}

{{/* The selector of the Pods, as in the kustomize install (immutable). */}}
{{- define "convoy.selectorLabels" -}}
app.kubernetes.io/name: convoy-apiserver
{{- end }}

{{/* The labels of every object of the server. */}}
{{- define "convoy.labels" -}}
app.kubernetes.io/name: convoy-apiserver
app.kubernetes.io/part-of: convoy
{{ include "convoy.helmLabels" . }}
{{- end }}

{{/* The labels Helm charts add to say who manages an object. */}}
{{- define "convoy.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The image: repository@digest when a digest is set, else repository:tag (the chart's appVersion by default). */}}
{{- define "convoy.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The Certificate whose CA cert-manager's cainjector writes into the APIService. */}}
{{- define "convoy.servingCertificate" -}}convoy-apiserver-serving-cert{{- end }}

{{/* The ServiceAccount subject of the server's bindings. */}}
{{- define "convoy.subject" -}}
- kind: ServiceAccount
  name: convoy-apiserver
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* Fails on a value the chart does not know. */}}
{{- define "convoy.validate" -}}
{{- if not (has .Values.servingCert.source (list "secret" "certManager" "selfSigned")) }}
{{- fail (printf "servingCert.source is %q: one of secret, certManager, selfSigned" .Values.servingCert.source) }}
{{- end }}
{{- if not (has .Values.tenancy.mode (list "namespaces" "cluster")) }}
{{- fail (printf "tenancy.mode is %q: one of namespaces, cluster" .Values.tenancy.mode) }}
{{- end }}
{{- if and (eq .Values.tenancy.mode "cluster") .Values.tenancy.namespaces }}
{{- fail "tenancy.namespaces is for tenancy.mode=namespaces: with mode cluster every namespace is already covered" }}
{{- end }}
{{- if and .Values.receiver.enabled (eq (int64 .Values.receiver.port) (int64 .Values.server.securePort)) }}
{{- fail (printf "receiver.port is server.securePort (%d): the receivers' listener needs a port of its own" (int64 .Values.receiver.port)) }}
{{- end }}
{{- if and .Values.servingCert.caBundle (ne .Values.servingCert.source "secret") }}
{{- fail "servingCert.caBundle is for servingCert.source=secret" }}
{{- end }}
{{- end }}
