import { Worker } from "node:worker_threads";
import type { TabContext } from "@tab-relay/shared";
import type { Logger } from "../logger";
import { countTokens } from "./tokens";

/** Counts prompt tokens for `usage`. Tokenising a full 64k-character context takes 5 to 30 ms of CPU. */
export interface TokenCounter {
  countPrompt(context: TabContext): Promise<number>;
  close(): Promise<void>;
}

function promptTexts(context: TabContext): string[] {
  return [context.active_text_before_cursor, context.active_text_after_cursor ?? "", context.surrounding_context ?? ""];
}

/** Counts on the calling thread; for tools and tests that do not serve traffic. */
export const inlineTokenCounter: TokenCounter = {
  countPrompt: async (context) => promptTexts(context).reduce((sum, text) => sum + countTokens(text), 0),
  close: async () => undefined,
};

/**
 * Counts in one worker thread, started on first use (most clients stream without asking for usage), so a big
 * prompt never stalls other requests' streams. If the worker fails,
 * the count is made inline rather than lost, and a new worker is started for the next request.
 */
export function createWorkerTokenCounter(options: { workerUrl: URL; logger: Logger }): TokenCounter {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, { resolve: (count: number) => void; reject: (error: Error) => void }>();

  const start = (): Worker => {
    const created = spawnWorker(options.workerUrl);
    created.unref();
    created.on("message", (message: { id: number; count: number }) => {
      const waiter = pending.get(message.id);
      pending.delete(message.id);
      waiter?.resolve(message.count);
    });
    const fail = (error: Error) => {
      if (worker === created) worker = undefined;
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
    };
    created.on("error", (error) => {
      options.logger.error("token counter worker failed", { error });
      fail(error);
    });
    created.on("exit", (code) => fail(new Error(`token counter worker exited with code ${code}`)));
    return created;
  };

  return {
    async countPrompt(context) {
      const texts = promptTexts(context);
      worker ??= start();
      const id = ++nextId;
      const target = worker;
      try {
        return await new Promise<number>((resolve, reject) => {
          pending.set(id, { resolve, reject });
          target.postMessage({ id, texts });
        });
      } catch {
        return inlineTokenCounter.countPrompt(context);
      }
    },
    async close() {
      const current = worker;
      worker = undefined;
      await current?.terminate();
    },
  };
}

/**
 * The bundle ships the worker as JavaScript. Run from the TypeScript sources (tests, benchmarks), the worker
 * thread needs tsx's loader, which a worker does not inherit, so it registers it before importing the file.
 */
function spawnWorker(url: URL): Worker {
  if (!url.pathname.endsWith(".ts")) return new Worker(url);
  const bootstrap = `import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(bootstrap, { eval: true });
}
