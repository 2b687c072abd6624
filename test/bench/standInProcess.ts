/**
 * Runs one of the strict model-server stand-ins (test/support/standIns) in a process of its own, for the
 * upstream-modes benchmark. Usage: node --import tsx test/bench/standInProcess.ts <vllm|llama.cpp|ollama|mistral>
 * '<reply as JSON>'. Prints `{"url": "http://127.0.0.1:PORT"}` (the server root) once it listens; stops on
 * SIGTERM or when stdin closes.
 */
import { startLlamaCppStandIn } from "../support/standIns/llamaCpp";
import { startMistralStandIn } from "../support/standIns/mistral";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { Reply, StandIn } from "../support/standIns/server";
import { startVllmStandIn } from "../support/standIns/vllm";
import { stopWith } from "./stopWith";

const kind = process.argv[2] ?? "";
const reply = JSON.parse(process.argv[3] ?? '{"text":"Hello from the stand-in"}') as Reply;
const starters: Record<string, () => Promise<StandIn>> = {
  vllm: () => startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-1.5B", reply, record: false }),
  "llama.cpp": () => startLlamaCppStandIn({ reply, record: false }),
  ollama: () => startOllamaStandIn({ reply, record: false }),
  mistral: () => startMistralStandIn({ reply, record: false }),
};
const start = starters[kind];
if (!start) {
  process.stderr.write(`unknown stand-in "${kind}"; one of ${Object.keys(starters).join(", ")}\n`);
  process.exit(2);
}
const standIn = await start();
// The handlers first: the benchmark may stop this process as soon as it reads the address.
stopWith(() => standIn.close());
process.stdout.write(`${JSON.stringify({ url: standIn.origin })}\n`);
