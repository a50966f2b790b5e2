# syntax=docker/dockerfile:1
#
# convoy-apiserver: a static binary on a distroless base, running as 65532.
#
#   docker build -t ghcr.io/kumodo/convoy-apiserver:TAG $(make -s print-docker-build-args) .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/kumodo/convoy-apiserver:TAG --push .
#
# The builder runs on the build machine's platform and cross-compiles for the
# target one (CGO is off, so no C toolchain is needed).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src

# Modules in their own layer: it is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
ARG TARGETOS
ARG TARGETARCH
# The build stamp (make prints these: make -s print-version).
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=unknown
RUN --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -o /out/convoy-apiserver \
      -ldflags "-s -w -X github.com/kumodo/convoy-apiserver/pkg/version.gitVersion=$VERSION -X github.com/kumodo/convoy-apiserver/pkg/version.gitCommit=$GIT_COMMIT -X github.com/kumodo/convoy-apiserver/pkg/version.buildDate=$BUILD_DATE" \
      ./cmd/convoy-apiserver

# No shell, no package manager; CA certificates and /etc/passwd with the user
# nonroot (65532) are included.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/convoy-apiserver /convoy-apiserver
USER 65532:65532
ENTRYPOINT ["/convoy-apiserver"]
