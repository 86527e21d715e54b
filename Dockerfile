# hermesd in a container: a static Go binary on a small Debian with the two
# speech tools it runs (espeak-ng, lame) and poppler's pdftotext (PDFs sent
# in a chat), as a non-root user, with HERMES_HOME on a volume.
#
#   docker build -t hermesd --build-arg COMMIT=$(git rev-parse HEAD) \
#       --build-arg BUILD_TIME=$(git log -1 --format=%cI) .
#   docker run -d --name hermesd -p 127.0.0.1:7600:7600 -v hermesd:/data \
#       -e HERMES_API_TOKEN=$(openssl rand -hex 16) hermesd
#
# The listener binds 0.0.0.0 inside the container, so HERMES_API_TOKEN is
# required (everything but /healthz and /readyz asks for it).

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
ARG BUILD_TIME=""
# Pure Go (modernc SQLite, in-process Opus): a static binary.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.buildCommit=${COMMIT} -X main.buildTime=${BUILD_TIME}" \
      -o /out/hermesd ./cmd/hermesd

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends espeak-ng lame poppler-utils ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin hermesd \
 && mkdir -p /data && chown hermesd:hermesd /data
COPY --from=build /out/hermesd /usr/local/bin/hermesd
USER hermesd
ENV HERMES_HOME=/data \
    HERMES_HTTP_ADDR=0.0.0.0:7600
VOLUME ["/data"]
EXPOSE 7600
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["hermesd", "health"]
ENTRYPOINT ["hermesd"]
CMD ["run"]
