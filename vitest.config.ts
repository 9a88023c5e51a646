import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Test files share one machine with their databases; more workers than cores only adds noise.
    maxWorkers: 2,
    // The key that seals stored secrets, shared by the tests and the service processes they start
    // (which inherit the environment), so that what one seals the other opens.
    // The AWS SDK warns once per process that it will need Node.js 22 from 2027; the tests know.
    env: {
      CDS_SECRET_KEY: "5ad1c0de5ad1c0de5ad1c0de5ad1c0de5ad1c0de5ad1c0de5ad1c0de5ad1c0de",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
  },
});
