/**
 * What the relay and its engine child say to each other over Node's IPC channel (JSON). Both sides import these
 * types; nothing else crosses. The child never trusts more than this shape: it runs the relay's own code.
 */

/** The text of one completion request, already cut to the relay's bounds. */
export interface PromptInput {
  /** The text before the cursor. */
  prefix: string;
  /** The text after the cursor. */
  suffix: string;
  /** Other files, most relevant first (the extension's ranked snippets), for the model's repository-level format. */
  files: { path: string; text: string }[];
  /** The current file's path, when known. */
  path: string | undefined;
  /** The repository's name, for `<|repo_name|>`. */
  repoName: string;
  /** The other files as path comments, for a configured template's `{context}`. */
  contextText: string;
}

export type ParentMessage =
  | { type: "complete"; id: number; prompt: PromptInput; maxTokens: number; temperature: number; seed?: number }
  | { type: "abort"; id: number }
  /**
   * A request is on its way and asks for nothing yet. A process that has been idle answers its first message
   * two to four times slower than a busy one (docs/benchmarks.md, "What a hop costs after a pause"); this one takes
   * that cost while the relay still reads and checks the request, so that the `complete` after it finds the child
   * awake.
   */
  | { type: "wake" };

/** Which llama.cpp build runs the model. */
export type EngineBinary = "CPU" | "CUDA" | "Vulkan" | "Metal";

/** The FIM tokens the model's vocabulary has, as text (undefined where it has none). */
export interface FimTokens {
  prefix: string;
  suffix: string;
  middle: string;
  fileSeparator: string | undefined;
  repoName: string | undefined;
  /** The configured FIM template (TAB_RELAY_FIM_TEMPLATE), when one is used instead of the model's metadata. */
  template?: string;
}

export interface EngineInfo {
  /** The GGUF's `general.name`, else the file's name. */
  model: string;
  path: string;
  /** Tokens per sequence. */
  contextSize: number;
  sequences: number;
  threads: number;
  binary: EngineBinary;
  fim: FimTokens;
  loadMs: number;
  /** The child's nice value once lowered (priority.ts), or why it could not be. */
  priority: { nice: number } | { problem: string };
}

/** What one completion cost, for metrics, the prefix-reuse tests and the benchmark. */
export interface CompletionStats {
  promptTokens: number;
  /** Prompt tokens the sequence already held, which were not evaluated again. */
  reusedTokens: number;
  /** Tokens node-llama-cpp evaluated as input for this request (its token meter). */
  evaluatedTokens: number;
  generatedTokens: number;
  /** From the request reaching the child to its first token, in ms. */
  firstTokenMs: number | undefined;
  generationMs: number;
  stopReason: string;
  sequence: number;
}

export type ChildMessage =
  | { type: "ready"; info: EngineInfo }
  /** The model could not be loaded; `reason` names what is wrong with the file or the machine. */
  | {
      type: "load-failed";
      reason: "not_found" | "not_gguf" | "corrupt" | "no_fim" | "no_binary" | "other";
      message: string;
    }
  | { type: "text"; id: number; text: string }
  | { type: "done"; id: number; stats: CompletionStats }
  | { type: "failed"; id: number; message: string };
