{{/* The chart's name: app.kubernetes.io/name, and the Prometheus job the rules select. */}}
{{- define "pool-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release name when it already says pool-controller. */}}
{{- define "pool-controller.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "pool-controller.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pool-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pool-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pool-controller.labels" -}}
helm.sh/chart: {{ include "pool-controller.chart" . }}
{{ include "pool-controller.selectorLabels" . }}
app.kubernetes.io/component: controller
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pool-controller.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pool-controller.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pool-controller.leaseName" -}}
{{- default (include "pool-controller.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{/* "all", "own" (the release namespace) or "other" (a named namespace). */}}
{{- define "pool-controller.watchScope" -}}
{{- $ns := .Values.watch.namespace | default "" }}
{{- if eq $ns "*" }}all
{{- else if or (eq $ns "") (eq $ns .Release.Namespace) }}own
{{- else }}other
{{- end }}
{{- end }}

{{/* The Secret holding the admin token, or "" when POSTs stay loopback-only. */}}
{{- define "pool-controller.adminTokenSecret" -}}
{{- if .Values.adminToken.existingSecret }}
{{- .Values.adminToken.existingSecret }}
{{- else if .Values.adminToken.value }}
{{- printf "%s-admin-token" (include "pool-controller.fullname" .) }}
{{- end }}
{{- end }}

{{/* The image reference: repository@digest when a digest is given, else repository:tag. */}}
{{- define "pool-controller.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* eppEndpointsFile.files as the comma-separated POOL=PATH[,role=R] list POOL_CONTROLLER_EPP_ENDPOINTS_FILE takes. */}}
{{- define "pool-controller.eppEndpointsFiles" -}}
{{- $items := list }}
{{- $dir := .Values.eppEndpointsFile.mountPath }}
{{- range .Values.eppEndpointsFile.files }}
{{- if .role }}
{{- $items = append $items (printf "%s=%s/%s,role=%s" .pool $dir .file .role) }}
{{- else }}
{{- $items = append $items (printf "%s=%s/%s" .pool $dir .file) }}
{{- end }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{/* sglangRouters as the comma-separated POOL=URL[,role=R] list POOL_CONTROLLER_SGLANG_ROUTER takes. */}}
{{- define "pool-controller.sglangRouters" -}}
{{- $items := list }}
{{- range .Values.sglangRouters }}
{{- if .role }}
{{- $items = append $items (printf "%s=%s,role=%s" .pool .url .role) }}
{{- else }}
{{- $items = append $items (printf "%s=%s" .pool .url) }}
{{- end }}
{{- end }}
{{- join "," $items }}
{{- end }}
