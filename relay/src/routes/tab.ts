import type { Response } from "express";
import { Router } from "express";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  CompletionRequest,
  type FinishReason,
  type Usage,
  RelayError,
  SSE_DONE,
  TAB_COMPLETIONS_PATH,
  TAB_DEFAULTS,
  encodeSseEvent,
  toRelayError,
} from "@tab-relay/shared";
import type { Clock } from "../clock";
import type { CompletionEvent, CompletionService } from "../completion/service";
import { TAB_MODELS, findModel } from "../completion/models";
import type { TokenCounter } from "../completion/tokenCounter";
import { countTokens } from "../completion/tokens";
import { requireScope } from "../http/authenticate";
import { parseWith } from "../http/body";
import { createIdSequence } from "../http/ids";
import { named } from "../http/requestContext";
import type { Lifecycle } from "../lifecycle";

/** GET /tab/models and POST /tab/chat/completions (mounted under /api/v1 and /v1). */
export function createTabRouter(deps: { completions: CompletionService; tokens: TokenCounter; clock: Clock; lifecycle: Lifecycle }): Router {
  const router = Router();
  const nextCompletionId = createIdSequence("chatcmpl-");

  router.get("/tab/models", named("/tab/models"), (_req, res) => {
    res.json({ data: { models: TAB_MODELS } });
  });

  router.post(TAB_COMPLETIONS_PATH, named(TAB_COMPLETIONS_PATH), requireScope("tab.complete"), async (req, res) => {
    const request = parseWith(CompletionRequest, req.body);
    const model = request.model ?? TAB_DEFAULTS.model;
    if (!findModel(model)) {
      throw new RelayError("VALIDATION_ERROR", `model: unknown model "${model}"; available: ${TAB_MODELS.map((m) => m.id).join(", ")}`);
    }
    if (request.tab_context.workspace_slug !== req.caller?.workspace.slug) {
      throw new RelayError("UNAUTHORIZED", "This API key is scoped to a different workspace than tab_context.workspace_slug");
    }

    const controller = new AbortController();
    const finished = deps.lifecycle.begin(() => controller.abort(new RelayError("SERVICE_UNAVAILABLE", "The relay is shutting down")));
    // The client went away: stop the model at once rather than generate text nobody will read.
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new RelayError("VALIDATION_ERROR", "Client disconnected"));
    };
    res.on("close", onClose);
    // The client may have gone while the request was authenticated and read; then `close` has already fired.
    if (res.destroyed) onClose();
    // The prompt's size is known now; counting it alongside generation keeps it off the response's critical path.
    const promptTokens = request.stream !== true || request.stream_options?.include_usage ? deps.tokens.countPrompt(request.tab_context) : undefined;
    const meta = { id: nextCompletionId(), created: Math.floor(deps.clock.now() / 1000), model };
    try {
      const events = deps.completions.run(request, controller.signal);
      if (request.stream === true) await streamCompletion(res, events, meta, controller.signal, promptTokens);
      else await answerCompletion(res, events, meta, promptTokens ?? Promise.resolve(0));
    } finally {
      res.off("close", onClose);
      finished();
    }
  });

  return router;
}

interface Meta {
  id: string;
  created: number;
  model: string;
}

/** One SSE frame of the stream; the usage frame is the same chunk with no choices. */
function frame(meta: Meta, choices: ChatCompletionChunk["choices"], usage?: Usage): string {
  const body: ChatCompletionChunk = { id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, choices };
  if (usage) body.usage = usage;
  return encodeSseEvent({ data: JSON.stringify(body) });
}

function chunk(meta: Meta, delta: ChatCompletionChunk["choices"][number]["delta"], finishReason: FinishReason | null): string {
  return frame(meta, [{ index: 0, delta, finish_reason: finishReason }]);
}

async function streamCompletion(
  res: Response,
  events: AsyncGenerator<CompletionEvent>,
  meta: Meta,
  signal: AbortSignal,
  /** Present when the client asked for a usage chunk. */
  promptTokens: Promise<number> | undefined,
): Promise<void> {
  let completion = "";
  // Fragments that arrive together (one upstream read often holds several) leave in one write, not one each.
  const write = (frame: string) => {
    if (res.writableCorked === 0) {
      res.cork();
      process.nextTick(() => res.uncork());
    }
    res.write(frame);
  };
  try {
    for await (const event of events) {
      if (event.type === "start") {
        // Headers wait for the provider's first answer, so failures before it still get a real HTTP status.
        res.writeHead(200, {
          "Content-Type": "text/event-stream; charset=utf-8",
          "Cache-Control": "no-cache, no-transform",
          Connection: "keep-alive",
          "X-Accel-Buffering": "no",
        });
        write(chunk(meta, { role: "assistant", content: "" }, null));
      } else if (event.type === "text") {
        completion += event.text;
        write(chunk(meta, { content: event.text }, null));
      } else {
        let tail = chunk(meta, {}, event.finishReason);
        if (promptTokens) {
          tail += frame(meta, [], usageOf(await promptTokens, completion));
        }
        res.end(`${tail}${encodeSseEvent({ data: SSE_DONE })}`);
      }
    }
  } catch (error) {
    if (signal.aborted && res.destroyed) return;
    if (!res.headersSent) throw error;
    // Mid-stream failure: an `event: error` frame with the usual envelope, and no [DONE].
    const failure = toRelayError(signal.aborted ? signal.reason : error);
    res.end(encodeSseEvent({ event: "error", data: JSON.stringify(failure.toBody()) }));
  }
}

async function answerCompletion(
  res: Response,
  events: AsyncGenerator<CompletionEvent>,
  meta: Meta,
  promptTokens: Promise<number>,
): Promise<void> {
  let content = "";
  let finishReason: FinishReason = "stop";
  for await (const event of events) {
    if (event.type === "text") content += event.text;
    else if (event.type === "end") finishReason = event.finishReason;
  }
  const usage = usageOf(await promptTokens, content);
  if (res.destroyed) return;
  const body: ChatCompletion = {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: finishReason }],
    usage,
  };
  res.json(body);
}

function usageOf(prompt: number, completion: string) {
  const output = countTokens(completion);
  return { prompt_tokens: prompt, completion_tokens: output, total_tokens: prompt + output };
}
