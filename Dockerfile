# syntax=docker/dockerfile:1
# leasehold: a small, non-root image that works with a read-only root filesystem.
# Build:  docker build -t leasehold:dev .

FROM node:22-bookworm-slim AS build
WORKDIR /src
# better-sqlite3 compiles its native addon from source.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts=false --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY cmd ./cmd
COPY src ./src
COPY examples ./examples
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
RUN ln -s /app/dist/cmd/leasehold.js /usr/local/bin/leasehold && chmod +x /app/dist/cmd/leasehold.js
# The node image's unprivileged user; numeric so runAsNonRoot can verify it.
USER 1000:1000
# Nothing is written outside the status volume (/leader) and, for the sqlite backend, --db.
# No JIT: a sidecar makes a few requests a minute, so an interpreter is plenty; it saves about
# 7 MB of RSS per pod and leaves no writable-and-executable memory (docs/benchmarks.md).
# Flags on the command line, not NODE_OPTIONS, so `leasehold run` children do not inherit them.
ENTRYPOINT ["node", "--jitless", "--no-expose-wasm", "/app/dist/cmd/leasehold.js"]
CMD ["sidecar", "--status-dir", "/leader", "--listen", "0.0.0.0:4040"]
