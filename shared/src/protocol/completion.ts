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
