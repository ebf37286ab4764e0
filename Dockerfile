# A minimal image of the gateway: a static binary on distroless, running as a
# non-root user, `toolgate serve` as the entry point, the ledger and decision
# log on a volume. Untested: the machines toolgate is built and tested on have
# no container runtime (docs/operations.md, "Container image").
#
#   docker build -t toolgate .
#   docker run -p 8080:8080 -v toolgate-data:/var/lib/toolgate \
#     -v "$PWD/toolgate.yaml:/etc/toolgate/toolgate.yaml:ro" toolgate
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/toolgate ./cmd/toolgate && mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/toolgate /usr/local/bin/toolgate
# The volume starts with this directory's owner: the image's non-root user.
COPY --from=build --chown=65532:65532 /out/data /var/lib/toolgate
VOLUME /var/lib/toolgate
WORKDIR /var/lib/toolgate
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/toolgate", "serve"]
CMD ["--config", "/etc/toolgate/toolgate.yaml"]
