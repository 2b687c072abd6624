/**
 * The embedded engine against its floor, in one run: node-llama-cpp called directly in this process (the floor) and
 * the relay serving the same file over HTTP (streamed), round by round in turn so both see the same machine load.
 * Each round is a cold prompt (its first line differs from every other round's, so nothing is reused) and then the
 * same prompt one keystroke later (its prefix reused). Ratios are against the floor in the same run; the machine is
 * shared, so absolute figures move between runs.
 *
 * The relay runs at its default number of sequences (2) and the floor with 1, the faster setting for one person.
 *
 * The relay runs as people run it, `tab-relay serve` in a process of its own, and the client is `node:http` with a
 * kept-alive connection: the floor has no client at all, so the lightest one keeps the client's own cost out of the
 * relay's figure. `--in-process` runs the relay inside this process with `fetch` instead, as the bench did before
 * 2026-11-28: there undici's own work (about 2.6 ms to the first text, measured with timestamps) shared the relay's
 * event loop and counted as the relay's.
 *
 * The relay's time to first token is split with its own /metrics: the engine child's first token (counted from the
 * request reaching the child) against the time the client saw; the rest is the HTTP route, the IPC hop and, with
 * several people, the wait for a sequence.
 *
 * Usage: npm run bench:engine -- [--rounds n] [--qwen] [--in-process] [--engine-nice n]
 *   --qwen  adds a model generated with Qwen2.5-Coder-0.5B's shape (about 670 MB, written to the system's temporary
 *           folder and removed after), cold and reused-prefix figures, and 1, 2 and 4 people at once.
 *   --engine-nice  the relay's TAB_RELAY_ENGINE_NICE (its default, 5, when not given); 0 runs the engine child at the
 *           relay's priority, as before 2026-11-28.
 */
import { rmSync } from "node:fs";
import { Agent } from "node:http";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { TAB_DEFAULTS } from "@tab-relay/shared";
import { engineModuleUrl } from "../../relay/src/engine/install";
import { testEngineDir, testModel } from "../support/engine";
import { QWEN_CODER_05B_SHAPE } from "../support/gguf";
import { completionBody, startTestRelay } from "../support/relayHarness";
import { keptAliveCall } from "./keptAliveCall";
import { cleanEnv, startBenchRelay } from "./servers";

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const option = (name: string, fallback: number) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const rounds = option("--rounds", 7);
const MAX = 32;
const CONTEXT = 2048;
/** A `delta.content` with at least one character (the role frame's is empty). */
const CONTENT = /"content":"[^"]/;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");

type Sequence = { tokenMeter: { usedInputTokens: number } };
type L = {
  getLlama(o: object): Promise<{
    loadModel(o: object): Promise<{
      tokenize(text: string, specialTokens?: boolean): number[];
      createContext(o: object): Promise<{ getSequence(): Sequence; dispose(): Promise<void> }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
  LlamaCompletion: new (o: object) => {
    generateInfillCompletion(p: string, s: string, o: object): Promise<string>;
  };
};

const dir = await testEngineDir();
const lib = (await import(engineModuleUrl(dir))) as L;

/** One figure per request: time to first token and decoding speed, in the client's view. */
interface Sample {
  ttft: number;
  tps: number;
  /** The engine child's own time to first token and decoding speed (relay only). */
  childTtft?: number;
  childTps?: number;
  /** Prompt tokens, a beginning-of-sequence token (which node-llama-cpp adds alike on both sides) not counted. */
  promptTokens: number;
  /** Input tokens node-llama-cpp evaluated (its token meter): what was not reused from the sequence. */
  evaluatedTokens: number;
}

async function openFloor(path: string) {
  const llama = await lib.getLlama({ build: "never", gpu: false, logLevel: "error" });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: CONTEXT, sequences: 1, threads: 1 });
  const sequence = context.getSequence();
  const completion = new lib.LlamaCompletion({ contextSequence: sequence });
  return {
    async run(text: string, seed: number): Promise<Sample> {
      const evaluatedBefore = sequence.tokenMeter.usedInputTokens;
      const started = performance.now();
      let first: number | undefined;
      let tokens = 0;
      await completion.generateInfillCompletion(text, "", {
        maxTokens: MAX,
        // The relay's own sampling temperature, so both sample alike.
        temperature: TAB_DEFAULTS.temperature,
        seed,
        onToken: (t: number[]) => {
          first ??= performance.now();
          tokens += t.length;
        },
      });
      const end = performance.now();
      // What generateInfillCompletion evaluates (LlamaCompletion.js, 3.21.1): <|fim_prefix|>, the text,
      // <|fim_suffix|>, the empty suffix, <|fim_middle|>.
      const promptTokens = model.tokenize(text, false).length + 3;
      return {
        ttft: first! - started,
        tps: (tokens - 1) / ((end - first!) / 1000),
        promptTokens,
        evaluatedTokens: sequence.tokenMeter.usedInputTokens - evaluatedBefore,
      };
    },
    async close() {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

/** What the bench asks of a relay, wherever it runs. */
interface RelayClient {
  /** Resolves at the response's end; `onChunk` sees each chunk of the body as it arrives. */
  post(path: string, json: unknown, onChunk: (text: string) => void): Promise<void>;
  get(path: string): Promise<string>;
  close(): Promise<void>;
}

/** The relay inside this process, asked with `fetch` (`--in-process`). */
async function inProcessRelay(env: Record<string, string>): Promise<RelayClient> {
  const relay = await startTestRelay({ env });
  return {
    async post(path, json, onChunk) {
      const response = await relay.request(path, { method: "POST", json });
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        onChunk(decoder.decode(value, { stream: true }));
      }
    },
    get: async (path) => (await relay.request(path)).text(),
    close: () => relay.close(),
  };
}

/** `tab-relay serve` in a process of its own, asked over one kept-alive `node:http` connection. */
async function processRelay(env: Record<string, string>): Promise<RelayClient> {
  const root = resolve(import.meta.dirname, "../..");
  const relay = await startBenchRelay({ root, baseEnv: cleanEnv(process.env) }, { settings: env });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const ready = async (deadline: number): Promise<void> => {
    // `serve` announces itself before the engine has loaded the model; until then completions answer 503.
    while ((await fetch(`${relay.url}/readyz`)).status !== 200) {
      if (performance.now() > deadline) throw new Error("the relay's engine was not ready within 120 s");
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const call = keptAliveCall(relay.url, relay.apiKey, agent);
  await ready(performance.now() + 120_000);
  return {
    post: (path, json, onChunk) => call("POST", path, JSON.stringify(json), onChunk),
    async get(path) {
      let text = "";
      await call("GET", path, undefined, (chunk) => (text += chunk));
      return text;
    },
    async close() {
      agent.destroy();
      await relay.stop();
    },
  };
}

/** A series of a /metrics text, summed over its labels when `labels` is empty. */
function metric(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    const space = line.lastIndexOf(" ");
    const series = line.slice(0, space);
    if (series === name || series === `${name}{${labels}}`) sum += Number(line.slice(space + 1));
  }
  return sum;
}

/** The relay on `path`; with `sequences` undefined, at its default number of sequences (config.ts). */
async function openRelay(path: string, sequences?: number) {
  const env = {
    TAB_RELAY_MODEL: path,
    TAB_RELAY_ENGINE_DIR: dir,
    TAB_RELAY_ENGINE_THREADS: "1",
    ...(sequences === undefined ? {} : { TAB_RELAY_ENGINE_SEQUENCES: String(sequences) }),
    TAB_RELAY_ENGINE_CONTEXT: String(CONTEXT),
    TAB_RELAY_CACHE_ENTRIES: "0",
    TAB_RELAY_LOG_LEVEL: "warn",
    ...(flag("--engine-nice") ? { TAB_RELAY_ENGINE_NICE: String(option("--engine-nice", 5)) } : {}),
  };
  const relay = flag("--in-process") ? await inProcessRelay(env) : await processRelay(env);
  /** One streamed completion; its generated tokens and the child's first-token time come from /metrics after. */
  async function stream(text: string): Promise<{ ttft: number; first: number; end: number }> {
    const started = performance.now();
    let first: number | undefined;
    let all = "";
    await relay.post(
      "/api/v1/tab/chat/completions",
      completionBody({ active_text_before_cursor: text }, { stream: true, max_completion_tokens: MAX }),
      (chunk) => {
        all += chunk;
        // The first text frame often arrives in the same chunk as the role frame (`"content":""`), so the test is
        // for a frame with text anywhere in what has arrived, not for a chunk without an empty one (which counted
        // the second text frame as the first, a whole token late).
        if (first === undefined && CONTENT.test(all)) first = performance.now();
      },
    );
    if (!all.includes("[DONE]")) throw new Error(`the stream did not end with [DONE]: ${all.slice(-300)}`);
    return { ttft: first! - started, first: first!, end: performance.now() };
  }
  // One /metrics read for all five: each read renders every series, and this runs just before a timed request, so
  // the relay should do as little else as possible then.
  const counters = async () => {
    const text = await relay.get("/metrics");
    return {
      generated: metric(text, "tab_relay_engine_tokens_total", 'kind="generated"'),
      prompt: metric(text, "tab_relay_engine_tokens_total", 'kind="prompt"'),
      evaluated: metric(text, "tab_relay_engine_tokens_total", 'kind="evaluated"'),
      childFirst: metric(text, "tab_relay_engine_time_to_first_token_seconds_sum"),
      childTps: metric(text, "tab_relay_engine_tokens_per_second_sum"),
    };
  };
  return {
    async run(text: string): Promise<Sample> {
      const before = await counters();
      const s = await stream(text);
      const after = await counters();
      const generated = after.generated - before.generated;
      return {
        ttft: s.ttft,
        tps: (generated - 1) / ((s.end - s.first) / 1000),
        childTtft: (after.childFirst - before.childFirst) * 1000,
        childTps: after.childTps - before.childTps,
        promptTokens: after.prompt - before.prompt,
        evaluatedTokens: after.evaluated - before.evaluated,
      };
    },
    /** `people` cold prompts at once: mean time to first token, mean wait beyond the child's own, tokens/s. */
    async together(texts: string[]) {
      const before = await counters();
      const started = performance.now();
      const results = await Promise.all(texts.map((t) => stream(t)));
      const wall = (Math.max(...results.map((r) => r.end)) - started) / 1000;
      const after = await counters();
      const generated = after.generated - before.generated;
      const ttft = mean(results.map((r) => r.ttft));
      const childTtft = ((after.childFirst - before.childFirst) * 1000) / texts.length;
      return {
        ttft,
        wait: ttft - childTtft,
        tokensPerSecond: generated / wall,
        perPerson: generated / wall / texts.length,
      };
    },
    close: () => relay.close(),
  };
}

/** A prompt unique to its round from its first line on, so a cold prompt shares nothing with what a sequence holds. */
const promptOf = (round: number, lines: number) =>
  `// round ${round}\n${Array.from({ length: lines }, (_, i) => `let value${i} = compute(${i}, ${round});`).join("\n")}\n`;

async function compare(label: string, path: string, lines: number, n: number) {
  const floor = await openFloor(path);
  // The relay as it runs by default (2 sequences, so a second person is served at once) against the floor's single
  // sequence, the faster setting for one person: the engine child dispatches a lone completion's decodes as a
  // context of 1 sequence does (sequences.ts dispatchSchedule), so the two do the same work per token.
  const relay = await openRelay(path);
  // One round each first, unmeasured: the first evaluation allocates buffers on both sides.
  await floor.run(promptOf(1000, lines), 0);
  await relay.run(promptOf(1001, lines));
  const f = { cold: [] as Sample[], warm: [] as Sample[] };
  const r = { cold: [] as Sample[], warm: [] as Sample[] };
  for (let i = 0; i < n; i++) {
    const text = promptOf(i, lines);
    f.cold.push(await floor.run(text, i));
    r.cold.push(await relay.run(text));
    f.warm.push(await floor.run(`${text}x`, i));
    r.warm.push(await relay.run(`${text}x`));
  }
  await relay.close();
  await floor.close();
  const m = (xs: Sample[], key: keyof Sample) => median(xs.map((x) => x[key] ?? NaN));
  const row = (name: string, xs: Sample[], base: Sample[]) =>
    `| ${label} | ${name} | ${m(xs, "ttft").toFixed(1)} ms | ${(m(xs, "ttft") - m(base, "ttft")).toFixed(1)} ms | ${
      xs[0]!.childTtft === undefined ? "" : `${m(xs, "childTtft").toFixed(1)} ms`
    } | ${m(xs, "tps").toFixed(1)} | ${(m(xs, "tps") / m(base, "tps")).toFixed(2)}× | ${
      xs[0]!.childTps === undefined ? "" : m(xs, "childTps").toFixed(1)
    } |`;
  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  // Issue 20's goals name no kind of prompt, so both are judged: a cold prompt and a keystroke that reuses its prefix.
  const ttftGap = (kind: "cold" | "warm") => m(r[kind], "ttft") - m(f[kind], "ttft");
  const tpsRatio = (kind: "cold" | "warm") => m(r[kind], "tps") / m(f[kind], "tps");
  const reuse = m(r.warm, "ttft") / m(r.cold, "ttft");
  const kinds = [
    ["cold", "cold"],
    ["warm", "prefix reused"],
  ] as const;
  return {
    goals: [
      ...kinds.map(
        ([kind, name]) =>
          `${label}: first token (${name}) within 2 ms of the floor: ${ttftGap(kind).toFixed(1)} ms ${verdict(ttftGap(kind) <= 2)}`,
      ),
      ...kinds.map(
        ([kind, name]) =>
          `${label}: tokens/s (${name}) at least 0.95x the floor: ${tpsRatio(kind).toFixed(2)}x ${verdict(tpsRatio(kind) >= 0.95)}`,
      ),
      `${label}: reused-prefix first token at most 30 % of a cold one's: ${(100 * reuse).toFixed(0)} % ${verdict(reuse <= 0.3)}`,
    ],
    rows: [
      row("floor, cold", f.cold, f.cold),
      row("relay, cold", r.cold, f.cold),
      row("floor, prefix reused", f.warm, f.warm),
      row("relay, prefix reused", r.warm, f.warm),
    ],
    // Like with like: both sides must evaluate the same prompt, or the comparison says nothing.
    prompts: `${label}: prompt tokens (medians), cold: floor ${m(f.cold, "promptTokens")}, relay ${m(r.cold, "promptTokens")}; prefix reused: floor ${m(f.warm, "promptTokens")}, relay ${m(r.warm, "promptTokens")}; evaluated, cold: floor ${m(f.cold, "evaluatedTokens")}, relay ${m(r.cold, "evaluatedTokens")}; prefix reused: floor ${m(f.warm, "evaluatedTokens")}, relay ${m(r.warm, "evaluatedTokens")}`,
    reuse: `${label}: reused-prefix first token at ${((100 * m(r.warm, "ttft")) / m(r.cold, "ttft")).toFixed(0)} % of a cold one's through the relay (floor ${((100 * m(f.warm, "ttft")) / m(f.cold, "ttft")).toFixed(0)} %)`,
  };
}

console.log(`load average at the start: ${load()} (${cpus().length} cores)`);
const tiny = testModel({ seed: 9, embedding: 256, layers: 4, heads: 4, feedForward: 512, oneLine: true });
const results = [await compare("tiny (256 wide, 4 layers)", tiny.path, 20, rounds)];
rmSync(dirname(tiny.path), { recursive: true, force: true });

const together: string[] = [];
if (flag("--qwen")) {
  const made = performance.now();
  const qwen = testModel({ ...QWEN_CODER_05B_SHAPE, seed: 5, oneLine: true });
  console.log(`Qwen2.5-Coder-0.5B-shaped model written in ${((performance.now() - made) / 1000).toFixed(1)} s`);
  try {
    results.push(await compare("Qwen2.5-Coder-0.5B shape", qwen.path, 20, Math.max(3, Math.ceil(rounds / 2))));
    const relay = await openRelay(qwen.path, 2);
    await relay.run(promptOf(2000, 20));
    for (const people of [1, 2, 4]) {
      const t = await relay.together(Array.from({ length: people }, (_, i) => promptOf(3000 + people * 10 + i, 20)));
      together.push(
        `| ${people} | ${t.ttft.toFixed(0)} ms | ${t.wait.toFixed(0)} ms | ${t.tokensPerSecond.toFixed(1)} | ${t.perPerson.toFixed(1)} |`,
      );
    }
    await relay.close();
  } finally {
    rmSync(dirname(qwen.path), { recursive: true, force: true });
  }
}

console.log(
  `\n${MAX} tokens per completion, 1 thread, context ${CONTEXT}, medians of ${rounds} rounds (${Math.max(3, Math.ceil(rounds / 2))} for the Qwen shape)\n`,
);
console.log(
  "| model | run | time to first token | vs floor | of which the engine child | tokens/s | vs floor | in the engine child |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const r of results) for (const row of r.rows) console.log(row);
console.log("");
for (const r of results) console.log(r.prompts);
for (const r of results) console.log(r.reuse);
console.log("");
for (const r of results) for (const goal of r.goals) console.log(goal);
if (together.length > 0) {
  console.log("\nPeople at once (Qwen shape, 2 sequences, cold prompts):\n");
  console.log(
    "| people | time to first token (mean) | waiting beyond the child's own | tokens/s, all | tokens/s, each |",
  );
  console.log("|---|---|---|---|---|");
  for (const row of together) console.log(row);
}
console.log(`\nload average at the end: ${load()}`);
