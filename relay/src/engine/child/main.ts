/**
 * The engine child: loads one GGUF model through node-llama-cpp and serves completions to the relay over IPC
 * (protocol.ts). It runs in its own process so that a llama.cpp abort, an out-of-memory kill or a corrupt file ends
 * this process and never the relay; the supervisor restarts it.
 *
 * Settings come from the environment the supervisor sets (TAB_RELAY_ENGINE_*). node-llama-cpp is imported from the
 * engine folder (install.ts) with `await import()`, so the relay never loads it unless a model is configured.
 */
import { readdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { getPriority, setPriority } from "node:os";
import { basename } from "node:path";
import type { ChildMessage, CompletionStats, EngineBinary, EngineInfo, ParentMessage } from "../protocol";
import {
  type PromptTokens,
  type TemplatePart,
  buildInfillTokens,
  buildTemplateTokens,
  templateMarkers,
  templatePieces,
} from "./prompt";
import { chooseSequence, dispatchSchedule } from "./sequences";
import { createOutbox } from "./outbox";
import { lowerPriority } from "./priority";

// The few parts of node-llama-cpp 3.21.1 this file uses (its .d.ts files); it is not a dependency of the relay, so
// its types are not at hand when the relay is built.
type Token = number;
interface LlamaModule {
  getLlama(options: {
    build: "never";
    gpu: false | "auto";
    logLevel: "error" | "warn";
    logger: (level: string, message: string) => void;
  }): Promise<Llama>;
  LlamaCompletion: new (options: { contextSequence: Sequence }) => Completion;
}
interface Llama {
  gpu: false | "cuda" | "vulkan" | "metal";
  loadModel(options: { modelPath: string; gpuLayers?: number | "auto" }): Promise<Model>;
}
interface Model {
  tokens: { infill: { prefix: Token | null; suffix: Token | null; middle: Token | null } };
  fileInfo: { metadata: { general?: { name?: string }; tokenizer?: { ggml?: Record<string, unknown> } } };
  tokenize(text: string, specialTokens?: boolean): Token[];
  detokenize(tokens: readonly Token[], specialTokens?: boolean): string;
  createContext(options: {
    contextSize: number;
    sequences: number;
    threads: number;
    batching: { dispatchSchedule: (dispatch: () => void) => void };
  }): Promise<Context>;
}
interface Context {
  contextSize: number;
  getSequence(): Sequence;
}
interface Sequence {
  contextTokens: Token[];
  tokenMeter: { usedInputTokens: number; usedOutputTokens: number };
}
interface Completion {
  generateCompletionWithMeta(
    input: Token[],
    options: {
      maxTokens: number;
      temperature: number;
      seed?: number;
      signal: AbortSignal;
      stopOnAbortSignal: true;
      customStopTriggers: (string | Token)[][];
      contextShiftSize: number;
      onToken: (tokens: Token[]) => void;
      onTextChunk: (text: string) => void;
    },
  ): Promise<{ response: string; metadata: { stopReason: string } }>;
}

const env = process.env;
const send = (message: ChildMessage) => process.send?.(message);

function setting(name: string): string {
  const value = env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set (the relay starts this process)`);
  return value;
}

/** The FIM keys llama.cpp reads from a GGUF (llama-vocab.cpp), named in the refusal of a model without them. */
const FIM_KEYS = {
  prefix: "tokenizer.ggml.fim_pre_token_id",
  suffix: "tokenizer.ggml.fim_suf_token_id",
  middle: "tokenizer.ggml.fim_mid_token_id",
} as const;

async function checkFile(path: string): Promise<ChildMessage | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return {
      type: "load-failed",
      reason: code === "ENOENT" ? "not_found" : "other",
      message: `the model file ${path} cannot be opened (${code ?? (error as Error).message})`,
    };
  }
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    if (bytesRead < 4 || head.toString("latin1") !== "GGUF") {
      return {
        type: "load-failed",
        reason: "not_gguf",
        message: `${path} is not a GGUF model file (a GGUF file starts with the bytes "GGUF"; this one starts with ${JSON.stringify(head.subarray(0, bytesRead).toString("latin1"))}). Give a .gguf file, or a name from \`tab-relay models list\``,
      };
    }
  } finally {
    await handle.close();
  }
  return undefined;
}

interface Slot {
  index: number;
  sequence: Sequence;
  completion: Completion;
  busy: boolean;
  lastUsed: number;
}

async function main(): Promise<void> {
  const modelPath = setting("TAB_RELAY_ENGINE_MODEL");
  const sequences = Number(setting("TAB_RELAY_ENGINE_SEQUENCES"));
  const threads = Number(setting("TAB_RELAY_ENGINE_THREADS"));
  const contextSize = Number(setting("TAB_RELAY_ENGINE_CONTEXT"));
  const gpu = setting("TAB_RELAY_ENGINE_GPU") === "off" ? false : "auto";
  const started = performance.now();

  const bad = await checkFile(modelPath);
  if (bad) return void send(bad);

  let llamaCpp: LlamaModule;
  let llama: Llama;
  try {
    llamaCpp = (await import(setting("TAB_RELAY_ENGINE_MODULE"))) as LlamaModule;
    llama = await llamaCpp.getLlama({
      build: "never",
      gpu,
      logLevel: "error",
      logger: (_level, message) => process.stderr.write(`${message}\n`),
    });
  } catch (error) {
    const message = (error as Error).message;
    return void send({
      type: "load-failed",
      reason: (error as Error).name === "NoBinaryFoundError" ? "no_binary" : "other",
      message: `node-llama-cpp could not start: ${message}. Reinstall the engine (\`tab-relay engine install\`)`,
    });
  }
  let model: Model;
  try {
    model = await llama.loadModel({ modelPath, ...(gpu === false ? { gpuLayers: 0 } : {}) });
  } catch (error) {
    return void send({
      type: "load-failed",
      reason: "corrupt",
      message: `llama.cpp could not load ${modelPath} (${(error as Error).message}): the file is damaged or cut short, or its architecture is one this llama.cpp does not know. Download it again (\`tab-relay models rm\`, then \`models pull\`)`,
    });
  }
  const ggml = model.fileInfo.metadata.tokenizer?.ggml ?? {};
  const tokenId = (key: string) => (typeof ggml[key] === "number" ? ggml[key] : undefined);
  const text = (token: number | undefined) => (token === undefined ? undefined : model.detokenize([token], true));
  const template = env["TAB_RELAY_ENGINE_FIM_TEMPLATE"];
  let layout: { kind: "metadata"; tokens: PromptTokens } | { kind: "template"; parts: TemplatePart[] };
  let fim: EngineInfo["fim"];
  let stopTokens: (number | undefined)[];
  if (template !== undefined && template !== "") {
    // A configured template wins over the metadata: its markers must each be one token of this vocabulary, or the
    // model would read them as text and write nonsense.
    const parts: TemplatePart[] = [];
    const markers: number[] = [];
    for (const piece of templatePieces(template)) {
      if ("slot" in piece) {
        parts.push(piece);
        continue;
      }
      for (const marker of templateMarkers(piece.text)) {
        const ids = model.tokenize(marker, true);
        if (ids.length !== 1) {
          return void send({
            type: "load-failed",
            reason: "no_fim",
            message: `the FIM template (TAB_RELAY_FIM_TEMPLATE) names ${marker}, which is not a token of ${basename(modelPath)}'s vocabulary (it reads as ${ids.length} tokens of text): use the template the model was trained with`,
          });
        }
        markers.push(ids[0]!);
      }
      parts.push({ tokens: model.tokenize(piece.text, true) });
    }
    const before = (slot: string) => {
      const at = parts.findIndex((part) => "slot" in part && part.slot === slot);
      const previous = at > 0 ? parts[at - 1] : undefined;
      return previous && "tokens" in previous ? model.detokenize(previous.tokens, true).trim() : "";
    };
    const last = parts[parts.length - 1];
    layout = { kind: "template", parts };
    fim = {
      prefix: before("prefix"),
      suffix: before("suffix"),
      middle: last && "tokens" in last ? model.detokenize(last.tokens, true).trim() : "",
      fileSeparator: undefined,
      repoName: undefined,
      template,
    };
    stopTokens = markers;
  } else {
    const infill = model.tokens.infill;
    const missing = (Object.keys(FIM_KEYS) as (keyof typeof FIM_KEYS)[]).filter((k) => infill[k] === null);
    if (missing.length > 0) {
      return void send({
        type: "load-failed",
        reason: "no_fim",
        message: `${basename(modelPath)} has no fill-in-the-middle tokens: its GGUF metadata lacks ${missing.map((k) => FIM_KEYS[k]).join(", ")} (and no <|fim_…|> tokens were found in its vocabulary). Use a code model trained for FIM (\`tab-relay models list\`), or, for a model whose FIM markers are tokens under other names, set its template (TAB_RELAY_FIM_TEMPLATE, --fim-template)`,
      });
    }
    const tokens: PromptTokens = {
      prefix: infill.prefix!,
      suffix: infill.suffix!,
      middle: infill.middle!,
      fileSeparator: tokenId("fim_sep_token_id"),
      repoName: tokenId("fim_rep_token_id"),
    };
    layout = { kind: "metadata", tokens };
    fim = {
      prefix: text(tokens.prefix)!,
      suffix: text(tokens.suffix)!,
      middle: text(tokens.middle)!,
      fileSeparator: text(tokens.fileSeparator),
      repoName: text(tokens.repoName),
    };
    stopTokens = [
      tokens.fileSeparator,
      tokens.prefix,
      tokens.suffix,
      tokens.middle,
      tokens.repoName,
      tokenId("fim_pad_token_id"),
    ];
  }
  const slots: Slot[] = [];
  const context = await model.createContext({
    contextSize,
    sequences,
    threads,
    batching: { dispatchSchedule: dispatchSchedule(() => slots.filter((slot) => slot.busy).length) },
  });
  for (let index = 0; index < sequences; index++) {
    const sequence = context.getSequence();
    slots.push({
      index,
      sequence,
      completion: new llamaCpp.LlamaCompletion({ contextSequence: sequence }),
      busy: false,
      lastUsed: 0,
    });
  }
  // Once the model is loaded (the relay waits for that at its start), so only serving runs at the lower priority;
  // every thread the loading started is set too.
  const priority = lowerPriority(Number(env["TAB_RELAY_ENGINE_NICE"] ?? "0"), {
    platform: process.platform,
    getPriority,
    setPriority,
    threadIds: () => readdirSync("/proc/self/task").map(Number),
  });
  const binary: EngineBinary =
    llama.gpu === "cuda" ? "CUDA" : llama.gpu === "vulkan" ? "Vulkan" : llama.gpu === "metal" ? "Metal" : "CPU";
  const info: EngineInfo = {
    model: model.fileInfo.metadata.general?.name ?? basename(modelPath),
    path: modelPath,
    contextSize: context.contextSize,
    sequences,
    threads,
    binary,
    fim,
    loadMs: Math.round(performance.now() - started),
    priority,
  };
  // Tokens that end a completion besides end-of-generation: the file separator and the FIM tokens themselves.
  const stops = [...new Set(stopTokens.filter((t): t is number => t !== undefined))].map((t) => [t]);

  const running = new Map<number, AbortController>();
  const outbox = createOutbox(send, {
    now: () => performance.now(),
    later: (run, ms) => void setTimeout(run, ms),
    endOfTurn: (run) => void setImmediate(run),
  });
  let clock = 0;

  async function complete(message: Extract<ParentMessage, { type: "complete" }>): Promise<void> {
    const received = performance.now();
    // node-llama-cpp keeps only the last `contextSize - contextShiftSize` input tokens (fitInputIntoContext in
    // LlamaCompletion.js, 3.21.1; its default shift is a tenth of the context). A prompt longer than that lost its
    // start, <|fim_prefix|> included, and the window it kept slid with every keystroke, so no prefix was ever
    // reused. The prompt is cut here instead, to what fits with room for the answer, and the shift is passed so
    // both sides use the same number (one more token for a beginning-of-sequence token some vocabularies prepend).
    const reserve = Math.max(message.maxTokens, Math.floor(contextSize / 10));
    const tokenize = (t: string) => model.tokenize(t, false);
    const budget = { maxTokens: Math.max(16, contextSize - reserve - 1) };
    const promptTokens =
      layout.kind === "template"
        ? buildTemplateTokens(message.prompt, layout.parts, tokenize, budget)
        : buildInfillTokens(message.prompt, layout.tokens, tokenize, budget);
    const choice = chooseSequence(
      slots.map((s) => ({ index: s.index, busy: s.busy, tokens: s.sequence.contextTokens, lastUsed: s.lastUsed })),
      promptTokens,
    );
    if (choice === undefined) {
      send({ type: "failed", id: message.id, message: "no free sequence (the relay sent more than it may)" });
      return;
    }
    const slot = slots[choice.index]!;
    slot.busy = true;
    slot.lastUsed = ++clock;
    const controller = new AbortController();
    running.set(message.id, controller);
    const inputBefore = slot.sequence.tokenMeter.usedInputTokens;
    let firstTokenMs: number | undefined;
    let generated = 0;
    try {
      const result = await slot.completion.generateCompletionWithMeta(promptTokens, {
        maxTokens: message.maxTokens,
        temperature: message.temperature,
        ...(message.seed === undefined ? {} : { seed: message.seed }),
        signal: controller.signal,
        stopOnAbortSignal: true,
        customStopTriggers: stops,
        contextShiftSize: reserve,
        onToken: (generatedTokens) => {
          if (firstTokenMs === undefined) firstTokenMs = performance.now() - received;
          generated += generatedTokens.length;
        },
        onTextChunk: (chunk) => {
          if (chunk !== "" && !controller.signal.aborted) outbox.text(message.id, chunk);
        },
      });
      const stats: CompletionStats = {
        promptTokens: promptTokens.length,
        // node-llama-cpp keeps the held tokens up to the first difference and evaluates at least the last one.
        reusedTokens: Math.min(choice.shared, promptTokens.length - 1),
        evaluatedTokens: slot.sequence.tokenMeter.usedInputTokens - inputBefore,
        generatedTokens: generated,
        firstTokenMs,
        generationMs: performance.now() - received,
        stopReason: result.metadata.stopReason,
        sequence: slot.index,
      };
      outbox.finish(message.id);
      send({ type: "done", id: message.id, stats });
    } catch (error) {
      outbox.finish(message.id);
      send({ type: "failed", id: message.id, message: (error as Error).message });
    } finally {
      running.delete(message.id);
      slot.busy = false;
    }
  }

  process.on("message", (raw: ParentMessage) => {
    if (raw.type === "complete") void complete(raw);
    else if (raw.type === "abort") running.get(raw.id)?.abort();
    // "wake": its arrival was the point (protocol.ts).
  });
  send({ type: "ready", info });
}

// The relay going away (its IPC channel closing) ends the engine too: a child must never outlive its relay.
process.on("disconnect", () => process.exit(0));
main().catch((error: unknown) => {
  process.stderr.write(`engine failed: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
