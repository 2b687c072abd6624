import { z } from "zod";
import { TAB_LIMITS } from "./limits";

const optionalText = (max: number) => z.string().max(max).optional();

/** What the editor knows about the cursor; sent by a client inside every completion request. */
export const TabContext = z
  .object({
    surface: z.string().trim().min(1).max(64),
    workspace_slug: z.string().min(1).max(128),
    entity_id: z.string().min(1).max(2048),
    document_type: z.enum(["plaintext", "markdown"]),
    active_text_before_cursor: z.string().max(TAB_LIMITS.activeTextBeforeCursor),
    active_text_after_cursor: optionalText(TAB_LIMITS.activeTextAfterCursor),
    surrounding_context: optionalText(TAB_LIMITS.surroundingContext),
    code_language: optionalText(128),
    file_path: optionalText(4096),
    block_kind: optionalText(128),
    note_title: optionalText(1024),
    document_title: optionalText(1024),
    taskboard_file_id: z.string().min(1).max(2048).optional(),
  })
  .superRefine((ctx, issues) => {
    if (ctx.surface === "tasks" && ctx.taskboard_file_id === undefined) {
      issues.addIssue({
        code: "custom",
        path: ["taskboard_file_id"],
        message: "taskboard_file_id is required when surface is tasks",
      });
    }
  });
export type TabContext = z.infer<typeof TabContext>;

/** Body of POST /api/v1/tab/chat/completions, sent by a client (the extension, the openai SDK, curl). */
export const CompletionRequest = z.object({
  model: z.string().min(1).max(128).optional(),
  stream: z.boolean().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
  tab_context: TabContext,
  max_completion_tokens: z.number().int().min(1).max(TAB_LIMITS.maxCompletionTokens).optional(),
  /**
   * Also stream the model's own text before the relay's postprocessing, as `event: raw` frames (the console's
   * playground shows it); only with `stream: true` (docs/api.md#the-models-raw-text).
   */
  tab_raw_text: z.boolean().optional(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

/**
 * What `CompletionRequest.parse(value)` returns, for a body every field of which is certainly valid, worked out
 * without zod; undefined for anything else, which the schema then parses (and words the errors of). Zod's result is
 * a new object with the schema's keys in the schema's order, unknown keys dropped and `surface` trimmed, and so is
 * this one (completion.test.ts compares the two on generated bodies). On the completion route zod cost about as much
 * CPU per request as the rest of the validation, the rate limit and authentication together (docs/benchmarks.md).
 */
export function acceptCompletionRequest(value: unknown): CompletionRequest | undefined {
  if (!isPlainObject(value)) return undefined;
  const context = acceptTabContext(value["tab_context"]);
  if (context === undefined) return undefined;
  const out: Record<string, unknown> = {};
  const model = value["model"];
  if (model !== undefined) {
    if (typeof model !== "string" || model.length < 1 || model.length > 128) return undefined;
    out["model"] = model;
  } else if ("model" in value) return undefined;
  if (!optionalBoolean(value, "stream", out)) return undefined;
  const streamOptions = value["stream_options"];
  if (streamOptions === null) out["stream_options"] = null;
  else if (streamOptions !== undefined) {
    if (!isPlainObject(streamOptions)) return undefined;
    const options: Record<string, unknown> = {};
    if (!optionalBoolean(streamOptions, "include_usage", options)) return undefined;
    out["stream_options"] = options;
  } else if ("stream_options" in value) return undefined;
  out["tab_context"] = context;
  const maxTokens = value["max_completion_tokens"];
  if (maxTokens !== undefined) {
    if (
      typeof maxTokens !== "number" ||
      !Number.isInteger(maxTokens) ||
      maxTokens < 1 ||
      maxTokens > TAB_LIMITS.maxCompletionTokens
    )
      return undefined;
    out["max_completion_tokens"] = maxTokens;
  } else if ("max_completion_tokens" in value) return undefined;
  if (!optionalBoolean(value, "tab_raw_text", out)) return undefined;
  return out as CompletionRequest;
}

/** TabContext's fields in its order: the longest string each may be, and whether it must be present and non-empty. */
const TAB_CONTEXT_TEXT: readonly (readonly [key: string, max: number, required: boolean, min: number])[] = [
  ["workspace_slug", 128, true, 1],
  ["entity_id", 2048, true, 1],
  ["document_type", 0, true, 0],
  ["active_text_before_cursor", TAB_LIMITS.activeTextBeforeCursor, true, 0],
  ["active_text_after_cursor", TAB_LIMITS.activeTextAfterCursor, false, 0],
  ["surrounding_context", TAB_LIMITS.surroundingContext, false, 0],
  ["code_language", 128, false, 0],
  ["file_path", 4096, false, 0],
  ["block_kind", 128, false, 0],
  ["note_title", 1024, false, 0],
  ["document_title", 1024, false, 0],
  ["taskboard_file_id", 2048, false, 1],
];

/**
 * The fields `acceptCompletionRequest` knows, in the schema's order: a field added to the schema and not here would be
 * dropped from a body the fast path accepts, so completion.test.ts compares these with the schemas' own keys.
 */
export const ACCEPTED_FIELDS = {
  request: ["model", "stream", "stream_options", "tab_context", "max_completion_tokens", "tab_raw_text"],
  tabContext: ["surface", ...TAB_CONTEXT_TEXT.map(([key]) => key)],
} as const;

function acceptTabContext(value: unknown): TabContext | undefined {
  if (!isPlainObject(value)) return undefined;
  const surface = value["surface"];
  if (typeof surface !== "string") return undefined;
  const trimmed = surface.trim();
  // The tasks surface has a rule across fields (superRefine): left to the schema.
  if (trimmed.length < 1 || trimmed.length > 64 || trimmed === "tasks") return undefined;
  const out: Record<string, unknown> = { surface: trimmed };
  for (const [key, max, required, min] of TAB_CONTEXT_TEXT) {
    const field = value[key];
    if (field === undefined) {
      if (required || key in value) return undefined;
      continue;
    }
    if (typeof field !== "string") return undefined;
    if (key === "document_type") {
      if (field !== "plaintext" && field !== "markdown") return undefined;
    } else if (field.length < min || field.length > max) return undefined;
    out[key] = field;
  }
  return out as TabContext;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  return Object.getPrototypeOf(value) === Object.prototype;
}

/** Copies `key` into `out` when it is a boolean; false when it is present and anything else. */
function optionalBoolean(value: Record<string, unknown>, key: string, out: Record<string, unknown>): boolean {
  const field = value[key];
  if (field === undefined) return !(key in value);
  if (typeof field !== "boolean") return false;
  out[key] = field;
  return true;
}

/** The fields the relay reads beside OpenAI's in a completion body. */
export type TabCompletionFields = Pick<z.input<typeof CompletionRequest>, "tab_context" | "tab_raw_text">;

/**
 * A completion body for the `openai` SDK in TypeScript, whose request type has no `tab_context`: the SDK's own type
 * (`OpenAI.Chat.ChatCompletionCreateParamsStreaming`, or `...NonStreaming`) with the relay's fields. Declared once as
 * a variable of this type, it passes to `chat.completions.create` unchanged; generic over the SDK's type, so shared
 * does not depend on `openai` (examples/openai-sdk/complete.ts, docs/api.md#with-the-openai-sdk).
 */
export type TabCompletionCreateParams<SdkParams extends object> = SdkParams & TabCompletionFields;

export const FinishReason = z.enum(["stop", "length"]);
export type FinishReason = z.infer<typeof FinishReason>;

export const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type Usage = z.infer<typeof Usage>;

/** One server-sent event of a streaming completion, sent by the relay; `choices[0].delta.content` is a fragment. */
export const ChatCompletionChunk = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
      finish_reason: FinishReason.nullable(),
    }),
  ),
  usage: Usage.nullish(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/** The whole answer of a non-streaming completion, sent by the relay; the suggestion is `choices[0].message.content`. */
export const ChatCompletion = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal("assistant"), content: z.string() }),
      finish_reason: FinishReason,
    }),
  ),
  usage: Usage,
});
export type ChatCompletion = z.infer<typeof ChatCompletion>;

/** A Tab model as listed by GET /api/v1/tab/models. */
export const TabModel = z.object({
  id: z.string(),
  object: z.literal("model"),
  created: z.number().int(),
  owned_by: z.string(),
  pricing: z.object({ inputPerMillionUsd: z.number(), outputPerMillionUsd: z.number() }),
  capabilities: z.object({ streaming: z.boolean(), surfaces: z.array(z.string()) }),
  /**
   * What answers for this model on this relay: the provider, and for the embedded engine the GGUF model, its context
   * size (tokens per sequence), the llama.cpp build (CPU, CUDA, Vulkan or Metal) and whether it is ready.
   */
  served_by: z
    .object({
      provider: z.string(),
      model: z.string().optional(),
      engine: z.enum(["CPU", "CUDA", "Vulkan", "Metal"]).optional(),
      context_size: z.number().int().optional(),
      state: z.enum(["starting", "ready", "restarting", "stopped"]).optional(),
    })
    .optional(),
});
export type TabModel = z.infer<typeof TabModel>;
export type TabModelServedBy = NonNullable<TabModel["served_by"]>;

export const ModelsResponse = z.object({ data: z.object({ models: z.array(TabModel) }) });
export type ModelsResponse = z.infer<typeof ModelsResponse>;

/** The failure envelope of every endpoint, and the payload of a mid-stream `event: error` frame. */
export const ErrorEnvelope = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

/** The SSE data payload that ends a successful stream. */
export const SSE_DONE = "[DONE]";
