# syntax=docker/dockerfile:1
# Multi-stage build on Debian (bookworm): the build stage compiles TypeScript with the dev
# dependencies; the runtime stage carries only production dependencies, the compiled app and the
# Debian packages of the local audio engines (ffmpeg, espeak-ng, pocketsphinx).

FROM node:26-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ormconfig.ts ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:26-bookworm-slim AS runtime
RUN apt-get update \
  && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
     ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us tini \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    GATEWAY_CONFIG=/app/config/gateway.yaml
COPY --from=build --chown=node:node /app/package.json ./package.json
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node config ./config
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini forwards SIGTERM to node, which lets in-flight requests finish before it exits.
ENTRYPOINT ["/usr/bin/tini", "--"]
# The same flags as `npm start`: the old generation grows by half its live size, not up to 4x (docs/performance.md, issue 26 item 4).
CMD ["node", "--heap-growing-percent=50", "dist/src/main.js"]
