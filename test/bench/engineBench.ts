/**
 * The embedded engine against its floor, in one run: node-llama-cpp called directly in this process on a generated
 * model, then the relay serving the same file over HTTP (streamed), cold and with the prefix reused. Ratios against
 * the floor measured in the same run; the machine is shared, so absolute figures move between runs.
 * Usage: npx tsx test/bench/engineBench.ts [rounds]
 */
import { engineModuleUrl } from "../../relay/src/engine/install";
import { testEngineDir, testModel } from "../support/engine";
import { completionBody, startTestRelay } from "../support/relayHarness";

const rounds = Number(process.argv[2] ?? 5);
const MAX = 32;
const dir = await testEngineDir();
const { path } = testModel({ seed: 9, embedding: 256, layers: 4, heads: 4, feedForward: 512, oneLine: true });
const prefix = Array.from({ length: 40 }, (_, i) => `let value${i} = compute(${i});`).join(" ");
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Floor: node-llama-cpp directly.
type L = {
  getLlama(o: object): Promise<{
    loadModel(o: object): Promise<{
      createContext(o: object): Promise<{ getSequence(): unknown; dispose(): Promise<void> }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
  LlamaCompletion: new (o: object) => {
    generateInfillCompletion(p: string, s: string, o: object): Promise<string>;
  };
};
const lib = (await import(engineModuleUrl(dir))) as L;
const llama = await lib.getLlama({ build: "never", gpu: false, logLevel: "error" });
const model = await llama.loadModel({ modelPath: path });
const context = await model.createContext({ contextSize: 1024, sequences: 1, threads: 1 });
const completion = new lib.LlamaCompletion({ contextSequence: context.getSequence() });
const floor = { ttft: [] as number[], tps: [] as number[] };
for (let i = 0; i < rounds; i++) {
  const started = performance.now();
  let first: number | undefined;
  let tokens = 0;
  await completion.generateInfillCompletion(`${i} ${prefix}`, "", {
    maxTokens: MAX,
    temperature: 0.8,
    seed: i,
    onToken: (t: number[]) => {
      first ??= performance.now();
      tokens += t.length;
    },
  });
  const end = performance.now();
  floor.ttft.push(first! - started);
  floor.tps.push((tokens - 1) / ((end - first!) / 1000));
}
await context.dispose();
await model.dispose();
await llama.dispose();

const relay = await startTestRelay({
  env: {
    TAB_RELAY_MODEL: path,
    TAB_RELAY_ENGINE_DIR: dir,
    TAB_RELAY_ENGINE_THREADS: "1",
    TAB_RELAY_ENGINE_SEQUENCES: "1",
    TAB_RELAY_ENGINE_CONTEXT: "1024",
    TAB_RELAY_CACHE_ENTRIES: "0",
  },
});
async function viaHttp(text: string): Promise<{ ttft: number; tps: number }> {
  const started = performance.now();
  const response = await relay.request("/api/v1/tab/chat/completions", {
    method: "POST",
    json: completionBody({ active_text_before_cursor: text }, { stream: true, max_completion_tokens: MAX }),
  });
  const reader = response.body!.getReader();
  let first: number | undefined;
  let chunks = 0;
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const n = (decoder.decode(value).match(/"content"/g) ?? []).length;
    if (n > 0) first ??= performance.now();
    chunks += n;
  }
  const end = performance.now();
  return { ttft: first! - started, tps: (chunks - 1) / ((end - first!) / 1000) };
}
const cold = { ttft: [] as number[], tps: [] as number[] };
const warm = { ttft: [] as number[] };
for (let i = 0; i < rounds; i++) {
  const a = await viaHttp(`${i} ${prefix}`);
  cold.ttft.push(a.ttft);
  cold.tps.push(a.tps);
  const b = await viaHttp(`${i} ${prefix} x`);
  warm.ttft.push(b.ttft);
}
await relay.close();
const f = (n: number) => n.toFixed(1);
console.log(
  `model: llama 256 wide, 4 layers, ${MAX} tokens, prompt ~${prefix.length} chars, ${rounds} rounds, 1 thread`,
);
console.log(`floor  (node-llama-cpp direct): TTFT ${f(median(floor.ttft))} ms, ${f(median(floor.tps))} tokens/s`);
console.log(
  `relay  (HTTP, cold prefix):     TTFT ${f(median(cold.ttft))} ms (+${f(median(cold.ttft) - median(floor.ttft))} ms), ${f(median(cold.tps))} chunks/s (${(median(cold.tps) / median(floor.tps)).toFixed(2)}x)`,
);
console.log(
  `relay  (HTTP, prefix reused):   TTFT ${f(median(warm.ttft))} ms (${((100 * median(warm.ttft)) / median(cold.ttft)).toFixed(0)}% of cold)`,
);
