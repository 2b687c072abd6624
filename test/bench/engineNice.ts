/**
 * The engine child's nice value (TAB_RELAY_ENGINE_NICE) A/B, keystroke by keystroke: one relay per value, each
 * `tab-relay serve` in a process of its own asked over a kept-alive `node:http` connection (as `bench:engine` asks
 * it), and node-llama-cpp called directly in this process as the floor. After one cold prompt, every keystroke adds
 * one character (its prefix reused) and goes to the floor and then to each relay, their order turned every
 * keystroke, so each value sees the same prompt at neighbouring moments of the machine's load. Many small paired
 * samples rather than `bench:engine`'s few rounds: on the shared 2-core machine one round's figure moves by more
 * than the difference looked for.
 *
 * Per value: the client's time to first text, the engine child's own first token (its /metrics), the rest (the
 * relay's path: the HTTP route and both IPC hops) and the child's tokens/s; then, keystroke by keystroke, how often
 * each value's path was shorter than the first value's.
 *
 * Usage: npm run bench:engine-nice -- [--keystrokes n] [--nice 0,5,10]
 */
import { rmSync } from "node:fs";
import { Agent } from "node:http";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { TAB_DEFAULTS } from "@tab-relay/shared";
import { engineModuleUrl } from "../../relay/src/engine/install";
import { testEngineDir, testModel } from "../support/engine";
import { completionBody } from "../support/relayHarness";
import { keptAliveCall } from "./keptAliveCall";
import { cleanEnv, startBenchRelay } from "./servers";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1]! : fallback;
};
const keystrokes = Number(option("--keystrokes", "150"));
const levels = option("--nice", "0,5").split(",").map(Number);
const MAX = 32;
const CONTEXT = 2048;
/** A `delta.content` with at least one character (the role frame's is empty). */
const CONTENT = /"content":"[^"]/;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");
const quantile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))]!;

interface Llama {
  loadModel(o: object): Promise<{
    createContext(o: object): Promise<{ getSequence(): unknown; dispose(): Promise<void> }>;
    dispose(): Promise<void>;
  }>;
  dispose(): Promise<void>;
}
type L = {
  getLlama(o: object): Promise<Llama>;
  LlamaCompletion: new (o: object) => {
    generateInfillCompletion(p: string, s: string, o: object): Promise<string>;
  };
};

const dir = await testEngineDir();
const lib = (await import(engineModuleUrl(dir))) as L;
const tiny = testModel({ seed: 9, embedding: 256, layers: 4, heads: 4, feedForward: 512, oneLine: true });

const llama = await lib.getLlama({ build: "never", gpu: false, logLevel: "error" });
const model = await llama.loadModel({ modelPath: tiny.path });
const context = await model.createContext({ contextSize: CONTEXT, sequences: 1, threads: 1 });
const completion = new lib.LlamaCompletion({ contextSequence: context.getSequence() });
/** The floor's time to first token. */
async function floor(text: string, seed: number): Promise<number> {
  const started = performance.now();
  let first: number | undefined;
  await completion.generateInfillCompletion(text, "", {
    maxTokens: MAX,
    temperature: TAB_DEFAULTS.temperature,
    seed,
    onToken: () => (first ??= performance.now()),
  });
  return first! - started;
}

async function openRelay(nice: number) {
  const root = resolve(import.meta.dirname, "../..");
  const relay = await startBenchRelay(
    { root, baseEnv: cleanEnv(process.env) },
    {
      settings: {
        TAB_RELAY_MODEL: tiny.path,
        TAB_RELAY_ENGINE_DIR: dir,
        TAB_RELAY_ENGINE_THREADS: "1",
        TAB_RELAY_ENGINE_CONTEXT: String(CONTEXT),
        TAB_RELAY_ENGINE_NICE: String(nice),
        TAB_RELAY_CACHE_ENTRIES: "0",
        TAB_RELAY_LOG_LEVEL: "warn",
      },
    },
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const call = keptAliveCall(relay.url, relay.apiKey, agent);
  while ((await fetch(`${relay.url}/readyz`)).status !== 200) await new Promise((r) => setTimeout(r, 100));
  const metric = async (name: string) => {
    let text = "";
    await call("GET", "/metrics", undefined, (chunk) => (text += chunk));
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    return line === undefined ? NaN : Number(line.slice(name.length + 1));
  };
  const childFirst = () => metric("tab_relay_engine_time_to_first_token_seconds_sum");
  const childTps = () => metric("tab_relay_engine_tokens_per_second_sum");
  return {
    nice,
    /** Client's time to first text, the child's own first token and its tokens/s; NaN where there was no text. */
    async run(text: string) {
      const [firstBefore, tpsBefore] = [await childFirst(), await childTps()];
      const body = JSON.stringify(
        completionBody({ active_text_before_cursor: text }, { stream: true, max_completion_tokens: MAX }),
      );
      const started = performance.now();
      let first = NaN;
      let all = "";
      await call("POST", "/api/v1/tab/chat/completions", body, (chunk) => {
        all += chunk;
        if (Number.isNaN(first) && CONTENT.test(all)) first = performance.now();
      });
      return {
        ttft: first - started,
        child: ((await childFirst()) - firstBefore) * 1000,
        tps: (await childTps()) - tpsBefore,
      };
    },
    async close() {
      agent.destroy();
      await relay.stop();
    },
  };
}

console.log(`load average at the start: ${load()} (${cpus().length} cores)`);
const relays = [];
for (const nice of levels) relays.push(await openRelay(nice));
const base = `// keystrokes\n${Array.from({ length: 20 }, (_, i) => `let value${i} = compute(${i}, 7);`).join("\n")}\n`;
await floor(base, 0);
for (const relay of relays) await relay.run(base);
const samples = relays.map(() => [] as { gap: number; path: number; ttft: number; child: number; tps: number }[]);
const letters = "abcdefghijklmnopqrstuvwxyz ";
let typed = "";
for (let k = 0; k < keystrokes; k++) {
  typed += letters[k % letters.length];
  const text = `${base}${typed}`;
  const f = await floor(text, k);
  for (let j = 0; j < relays.length; j++) {
    const at = (k + j) % relays.length;
    const r = await relays[at]!.run(text);
    samples[at]!.push({ gap: r.ttft - f, path: r.ttft - r.child, ttft: r.ttft, child: r.child, tps: r.tps });
  }
}
for (const relay of relays) await relay.close();
await context.dispose();
await model.dispose();
await llama.dispose();
rmSync(dirname(tiny.path), { recursive: true, force: true });

console.log(
  `\n${keystrokes} keystrokes (prefix reused), ${MAX} tokens each, tiny model (256 wide, 4 layers), 1 thread\n`,
);
console.log(
  "| engine nice | first text, p50 (p25–p75) | child's own first token, p50 | relay's path (first text − child's), p50 (p75, p90) | vs floor, paired p50 (p75) | child tokens/s, p50 | path shorter than nice " +
    `${levels[0]}'s |`,
);
console.log("|---|---|---|---|---|---|---|");
const firstLevel = samples[0]!;
for (const [i, xs] of samples.entries()) {
  const ok = xs.filter((s) => Number.isFinite(s.ttft) && Number.isFinite(s.child));
  const pick = (key: "gap" | "path" | "ttft" | "child" | "tps", p: number) =>
    quantile(
      ok.map((s) => s[key]),
      p,
    ).toFixed(2);
  const pairs = xs
    .map((s, k) => [s.path, firstLevel[k]!.path] as const)
    .filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b));
  const shorter = pairs.filter(([a, b]) => a < b).length;
  console.log(
    `| ${levels[i]} | ${pick("ttft", 0.5)} ms (${pick("ttft", 0.25)}–${pick("ttft", 0.75)}) | ${pick("child", 0.5)} ms | ${pick("path", 0.5)} ms (${pick("path", 0.75)}, ${pick("path", 0.9)}) | ${pick("gap", 0.5)} ms (${pick("gap", 0.75)}) | ${pick("tps", 0.5)} | ${i === 0 ? "" : `${shorter} of ${pairs.length}`} |`,
  );
}
console.log(`\nload average at the end: ${load()}`);
