// Runs in a worker thread: counts tokens so the relay's event loop never spends milliseconds on a 64k prompt.
import { parentPort } from "node:worker_threads";
import { countTokens } from "./tokens";

parentPort?.on("message", (message: { id: number; texts: string[] }) => {
  let total = 0;
  for (const text of message.texts) total += countTokens(text);
  parentPort?.postMessage({ id: message.id, count: total });
});
