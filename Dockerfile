# The operator image for those who build with a container engine, for both platforms:
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg VERSION=v0.1.0 \
#     --build-arg REVISION=$(git rev-parse HEAD) -t operator:v0.1.0 .
# `make image` (hack/image) builds the same image with no engine: the same static binary
# (CGO_ENABLED=0, -trimpath, -tags kustomize_disable_go_plugin_support (no Go-plugin
# loader: see the Makefile's GOTAGS), -ldflags "-s -w -X main.version=…"), at /operator, run as
# 65532:65532, with the same OCI labels; hack/image's test checks this file says so.
ARG GO_VERSION=1.26.8

# The build stage runs on the build machine and cross-compiles for each target platform.
FROM --platform=${BUILDPLATFORM} golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0-dev
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -tags kustomize_disable_go_plugin_support -ldflags "-s -w -X main.version=${VERSION}" -o /operator ./cmd/operator

# static: CA certificates, /etc/passwd with nonroot (65532), /tmp; no shell.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
LABEL org.opencontainers.image.source="https://github.com/openuniverse/operator" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /operator /operator
USER 65532:65532
ENTRYPOINT ["/operator"]
