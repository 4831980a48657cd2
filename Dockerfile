# syntax=docker/dockerfile:1
# pool-controller: the service image. Multi-stage: the TypeScript build needs dev dependencies,
# the runtime image gets production dependencies and the compiled JavaScript only.

# Node 24 is the current LTS line.
ARG NODE_IMAGE=node:24-bookworm-slim

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
# The `node` user of the official image, by number so Kubernetes can verify runAsNonRoot.
USER 1000:1000
# The control plane: REST API, /healthz, /readyz and /metrics (--listen, default 0.0.0.0:8080).
EXPOSE 8080
ENTRYPOINT ["node", "dist/src/main.js"]
