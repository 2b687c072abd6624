import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency loaded on first use instead of at start: pg and ioredis cost a relay on SQLite without Redis
 * some 14 MB of resident memory and a few hundred milliseconds of start-up it never needed. Types come from an
 * `import type` of the same package.
 */
export function lazyRequire<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
