# benchlab as a container image: one static binary (musl) and nothing else,
# for the agents and the controller that `benchlab lab kubernetes` places on
# a cluster (README, "Running on Kubernetes").
#
#   docker build -t REGISTRY/benchlab:TAG . && docker push REGISTRY/benchlab:TAG
#
# Alpine's Rust targets musl, which links statically by default: the image
# needs no libc, and the same file runs on any x86-64 or arm64 Linux node.
# smb:// file suites are not available from this image (they load Samba's
# libsmbclient at run time, which a static binary cannot); web suites,
# file:// suites, agents and the controller are.
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev gcc binutils
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p benchlab \
 && cp target/release/benchlab /benchlab \
 && strip /benchlab \
 # A dynamic section with NEEDED entries would mean a library the image lacks.
 && if readelf -d /benchlab | grep -q NEEDED; then echo "benchlab is not static" >&2; exit 1; fi

FROM scratch
COPY --from=build /benchlab /benchlab
# The same unprivileged user the generated manifests run as.
USER 65532:65532
ENTRYPOINT ["/benchlab"]
