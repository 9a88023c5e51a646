import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Test files share one machine with their databases; more workers than cores only adds noise.
    maxWorkers: 2,
  },
});
