# The service's image: built in one stage, run from another with production dependencies only,
# as the unprivileged `node` user. test/dockerfile.test.ts performs these same steps (the
# production install in a fresh directory, the start, an upload and a read) and fails when they
# stop working: keep the two in step.

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages ./packages
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 CDS_DATA_DIR=/var/lib/cds
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages ./packages
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY migrations ./migrations
COPY --from=build /app/dist ./dist
RUN mkdir -p /var/lib/cds && chown node:node /var/lib/cds
USER node
EXPOSE 8080
# A worker (CDS_ROLE=worker) answers /health on CDS_METRICS_PORT, which it then needs.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "-e", "const e=process.env;fetch('http://127.0.0.1:'+((e.CDS_ROLE==='worker'?e.CDS_METRICS_PORT:e.PORT)||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The node flags of src/platform/node-flags.ts (decision 0035), as `npm start` passes them.
CMD ["node", "--max-semi-space-size=32", "dist/main.js", "serve"]
