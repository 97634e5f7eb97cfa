import react from "@vitejs/plugin-react";
import { defineConfig } from "vitest/config";

// The playground's API server; `python -m psych_playground serve` binds here by default.
const API = "http://127.0.0.1:3000";

export default defineConfig({
  plugins: [react()],
  server: {
    host: "127.0.0.1",
    proxy: { "/api": { target: API, changeOrigin: false } },
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: true,
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/test/setup.ts"],
    globals: false,
    testTimeout: 10_000,
  },
});
