# The image of convoy-apiserver for the pipelines that build with a Dockerfile
# (docker build, BuildKit, buildah, a forge's builder): the image `make image`
# builds without a container engine (hack/image), built the same way. Which to
# use, and what is identical: docs/operators/image-and-chart.md. The tests of
# hack/tools/dockerfile fail when the two drift apart.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     $(make -s print-docker-build-args) -t REGISTRY/REPOSITORY:TAG --push .
#
# The builder stage runs on the build machine's platform and cross-compiles
# for the target's (CGO_ENABLED=0: no C toolchain). The sources are a bind
# mount and the module and build caches are cache mounts: none is in a layer,
# and the caches are kept from one build to the next.

# The Go toolchain's image of go.mod's Go 1.26 (1.26.8, the latest patch
# release when it was pinned), its index of platforms pinned by digest, as
# docker-library/repo-info lists it (repos/golang/remote/1.26.8-bookworm.md).
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:f4191582e1522dfc5980a6bdc0309a756f9697f3e7d0f199c7e26fc82ab324fd AS build
WORKDIR /src
ARG TARGETOS
ARG TARGETARCH
# The version stamp: `make -s print-docker-build-args` prints the values
# `make image` uses.
ARG VERSION=v0.0.0-dev
ARG GIT_COMMIT=unknown
ARG BUILD_DATE=unknown
# An empty tmp/ (1777); the server built as hack/image builds it: static,
# without paths of this machine, without VCS fields, without a build ID, at
# the baseline instruction set; the binary 0755. /out/ is the one layer of
# the final stage.
RUN --mount=type=bind,target=/src \
    --mount=type=cache,target=/cache/mod \
    --mount=type=cache,target=/cache/build \
    mkdir -p -m 1777 /out/tmp \
 && GOMODCACHE=/cache/mod GOCACHE=/cache/build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOAMD64=v1 GOARM64=v8.0 GOFLAGS= \
    go build -trimpath -buildvcs=false \
      -ldflags "-X github.com/kumodo/convoy-apiserver/pkg/version.gitVersion=$VERSION -X github.com/kumodo/convoy-apiserver/pkg/version.gitCommit=$GIT_COMMIT -X github.com/kumodo/convoy-apiserver/pkg/version.buildDate=$BUILD_DATE -s -w -buildid=" \
      -o /out/convoy-apiserver ./cmd/convoy-apiserver \
 && chmod 0755 /out/convoy-apiserver

# No shell, no package manager, no CA file: the server embeds its CA roots.
FROM scratch
ARG VERSION=v0.0.0-dev
ARG BUILD_DATE=unknown
ARG IMAGE_SOURCE=https://github.com/kumodo/convoy-apiserver
ARG IMAGE_REVISION=unknown
# One layer: /convoy-apiserver and /tmp, owned by root.
COPY --from=build /out/ /
# Numeric, not root: the kubelet can check runAsNonRoot without /etc/passwd.
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/convoy-apiserver"]
LABEL org.opencontainers.image.source=$IMAGE_SOURCE \
      org.opencontainers.image.revision=$IMAGE_REVISION \
      org.opencontainers.image.version=$VERSION \
      org.opencontainers.image.created=$BUILD_DATE
