import type { RequestHandler, Response } from "express";
import { Router } from "express";
import { z } from "zod";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  CompletionRequest,
  type FinishReason,
  acceptCompletionRequest,
  OPENAI_BASE_PATH,
  OPENAI_COMPLETIONS_PATH,
  type TabModel,
  type Usage,
  RelayError,
  SSE_DONE,
  TAB_COMPLETIONS_PATH,
  TAB_DEFAULTS,
  type AwaitedLater,
  awaitedLater,
  encodeSseEvent,
  toRelayError,
} from "@tab-relay/shared";
import { type AbortLike, Aborter } from "../aborter";
import type { Clock } from "../clock";
import type { CompletionService, CompletionSink } from "../completion/service";
import { TAB_MODELS, findModel } from "../completion/models";
import type { TokenCounter } from "../completion/tokenCounter";
import { countTokens } from "../completion/tokens";
import { requireScope } from "../http/authenticate";
import { sendJson } from "../http/errors";
import { writeHeadWithHeld } from "../http/heldHeaders";
import { parseWith } from "../http/body";
import { createIdSequence } from "../http/ids";
import { named } from "../http/requestContext";
import type { Lifecycle } from "../lifecycle";
import type { TabModelServedBy } from "@tab-relay/shared";
import type { UsageRecorder } from "../usage/recorder";

type TabDeps = {
  completions: CompletionService;
  tokens: TokenCounter;
  clock: Clock;
  lifecycle: Lifecycle;
  usage: Pick<UsageRecorder, "completion">;
  /** What answers the models listed (the embedded engine's model, its context and build), when a provider says. */
  servedBy?: () => TabModelServedBy | undefined;
};

/** A model as OpenAI's `GET /models` lists it: what the `openai` SDK's `models.list()` reads. */
function openAiModel(model: TabModel): { id: string; object: "model"; created: number; owned_by: string } {
  return { id: model.id, object: "model", created: model.created, owned_by: model.owned_by };
}

export const ModelParams = z.object({ id: z.string().min(1).max(128) });

/**
 * GET /tab/models and POST /tab/chat/completions (mounted under /api/v1 and /v1), and under /tab/openai the same
 * completion route beside OpenAI's model list, so the `openai` SDK's base URL can be that one path.
 */
export function createTabRouter(
  deps: TabDeps,
  completionHandlers: readonly RequestHandler[] = createCompletionHandlers(deps),
): Router {
  const router = Router();

  router.get("/tab/models", named("/tab/models"), (_req, res) => {
    const servedBy = deps.servedBy?.();
    res.json({
      data: { models: servedBy ? TAB_MODELS.map((model) => ({ ...model, served_by: servedBy })) : TAB_MODELS },
    });
  });

  router.post(TAB_COMPLETIONS_PATH, named(TAB_COMPLETIONS_PATH), ...completionHandlers);

  router.get(`${OPENAI_BASE_PATH}/models`, named(`${OPENAI_BASE_PATH}/models`), (_req, res) => {
    res.json({ object: "list", data: TAB_MODELS.map(openAiModel) });
  });
  router.get(`${OPENAI_BASE_PATH}/models/:id`, named(`${OPENAI_BASE_PATH}/models/:id`), (req, res) => {
    const { id } = parseWith(ModelParams, req.params, "path");
    const model = findModel(id);
    if (!model)
      throw new RelayError(
        "NOT_FOUND",
        `path.id: no model ${id}; this relay serves ${TAB_MODELS.map((m) => m.id).join(", ")}`,
      );
    res.json(openAiModel(model));
  });
  router.post(OPENAI_COMPLETIONS_PATH, named(OPENAI_COMPLETIONS_PATH), ...completionHandlers);

  return router;
}

/**
 * POST /tab/chat/completions after authentication, rate limiting and body reading: the scope check and the
 * completion. They use Node's request and response API only, so the app's completion lane can serve them too.
 */
export function createCompletionHandlers(deps: TabDeps): RequestHandler[] {
  const nextCompletionId = createIdSequence("chatcmpl-");
  const complete: RequestHandler = async (req, res) => {
    // Zod only for a body the fast path is not sure of: same result, and zod words the errors.
    const request = acceptCompletionRequest(req.body) ?? parseWith(CompletionRequest, req.body);
    const model = request.model ?? TAB_DEFAULTS.model;
    if (!findModel(model)) {
      throw new RelayError(
        "VALIDATION_ERROR",
        `model: unknown model "${model}"; available: ${TAB_MODELS.map((m) => m.id).join(", ")}`,
      );
    }
    if (request.tab_raw_text === true && request.stream !== true) {
      throw new RelayError(
        "VALIDATION_ERROR",
        "tab_raw_text: the model's raw text is only sent in a stream; set stream to true",
      );
    }
    if (request.tab_context.workspace_slug !== req.caller?.workspace.slug) {
      throw new RelayError(
        "UNAUTHORIZED",
        "This API key is scoped to a different workspace than tab_context.workspace_slug",
      );
    }

    // The request's abort: a plain Aborter, as every consumer of it takes (an AbortController's signal was
    // about 1 % of the relay's busy time per completion, docs/benchmarks.md).
    const controller = new Aborter();
    const finished = deps.lifecycle.begin(
      () => controller.abort(new RelayError("SERVICE_UNAVAILABLE", "The relay is shutting down")),
      request.stream === true ? "stream" : "answer",
    );
    // The client went away: stop the model at once rather than generate text nobody will read.
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new RelayError("VALIDATION_ERROR", "Client disconnected"));
    };
    res.on("close", onClose);
    // The client may have gone while the request was authenticated and read; then `close` has already fired.
    if (res.destroyed) onClose();
    // The prompt's size is known now; counting it alongside generation keeps it off the response's critical path. It
    // is awaited once the model has answered, so it has a handler until then (a rejection would end the process).
    const promptTokens =
      request.stream !== true || request.stream_options?.include_usage
        ? awaitedLater(deps.tokens.countPrompt(request.tab_context))
        : undefined;
    const meta = { id: nextCompletionId(), created: Math.floor(deps.clock.now() / 1000), model };
    // Counted in memory once the request is over (usage/recorder.ts): nothing here waits for the database.
    const outcome: Outcome = { cacheHit: false, failed: false };
    try {
      if (request.stream === true)
        outcome.failed = !(await streamCompletion(
          res,
          deps.completions,
          request,
          meta,
          controller,
          promptTokens,
          outcome,
        ));
      else
        await answerCompletion(
          res,
          deps.completions,
          request,
          meta,
          controller,
          promptTokens ?? awaitedLater(Promise.resolve(0)),
          outcome,
        );
    } catch (error) {
      // A client that went away is not the relay's error.
      outcome.failed = !controller.aborted || !res.destroyed;
      throw error;
    } finally {
      res.off("close", onClose);
      finished();
      const caller = req.caller;
      if (caller)
        deps.usage.completion(
          { workspaceId: caller.workspace.id, userId: caller.user.id },
          {
            id: meta.id,
            // A document without a code language (Markdown, notes) is counted under its document type, which is
            // the language id the extension names in its report on it (markdown, plaintext).
            language: request.tab_context.code_language ?? request.tab_context.document_type,
            model,
            ...outcome,
          },
        );
    }
  };
  return [requireScope("tab.complete"), complete];
}

interface Meta {
  id: string;
  created: number;
  model: string;
}

/** What the usage counts learn of a completion; the sink marks a cache hit on it. */
interface Outcome {
  cacheHit: boolean;
  failed: boolean;
}

/**
 * Frames of one stream. Every chunk shares its id, object, created and model, so that part is encoded once
 * and each frame only adds its choices: the same bytes `JSON.stringify` of the whole chunk gives, for less work.
 */
function framer(meta: Meta) {
  const common = JSON.stringify({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
  } satisfies Omit<ChatCompletionChunk, "choices">);
  const head = `data: ${common.slice(0, -1)},"choices":`;
  return {
    role: `${head}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n`,
    text: (text: string) =>
      `${head}[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":null}]}\n\n`,
    finish: (reason: FinishReason) => `${head}[{"index":0,"delta":{},"finish_reason":${JSON.stringify(reason)}}]}\n\n`,
    usage: (usage: Usage) => `${head}[],"usage":${JSON.stringify(usage)}}\n\n`,
  };
}

const DONE_FRAME = encodeSseEvent({ data: SSE_DONE });
/** Names and values, after the request id and rate limit headers, as `writeHeadWithHeld` takes them. */
const SSE_HEADERS = [
  "Content-Type",
  "text/event-stream; charset=utf-8",
  "Cache-Control",
  "no-cache, no-transform",
  "Connection",
  "keep-alive",
  "X-Accel-Buffering",
  "no",
];

async function streamCompletion(
  res: Response,
  completions: CompletionService,
  request: CompletionRequest,
  meta: Meta,
  signal: AbortLike,
  /** Present when the client asked for a usage chunk. */
  promptTokens: AwaitedLater<number> | undefined,
  outcome: Outcome,
): Promise<boolean> {
  const frames = framer(meta);
  let completion = "";
  // Frames produced in one turn of the event loop leave in one write: when the whole answer arrives at once, the
  // headers, every chunk and [DONE] go out together with `end`, and otherwise at the end of the turn.
  let pending = "";
  let flushing = false;
  const flush = () => {
    flushing = false;
    if (pending === "" || res.writableEnded || res.destroyed) return;
    res.write(pending);
    pending = "";
  };
  const send = (frame: string) => {
    pending += frame;
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };
  try {
    const sink: CompletionSink = {
      start() {
        // Headers wait for the provider's first answer, so failures before it still get a real HTTP status.
        writeHeadWithHeld(res, 200, SSE_HEADERS);
        send(frames.role);
      },
      text(text) {
        completion += text;
        send(frames.text(text));
      },
      cached() {
        outcome.cacheHit = true;
      },
    };
    if (request.tab_raw_text === true)
      sink.raw = (text) => send(encodeSseEvent({ event: "raw", data: JSON.stringify({ text }) }));
    const finishReason = await completions.run(request, signal, sink);
    let tail = frames.finish(finishReason);
    if (promptTokens) tail += frames.usage(usageOf(await promptTokens, completion));
    res.end(pending + tail + DONE_FRAME);
    pending = "";
    return true;
  } catch (error) {
    if (signal.aborted && res.destroyed) return true;
    if (!res.headersSent) throw error;
    // Mid-stream failure: an `event: error` frame with the usual envelope, and no [DONE].
    const failure = toRelayError(signal.aborted ? signal.reason : error);
    res.end(pending + encodeSseEvent({ event: "error", data: JSON.stringify(failure.toBody()) }));
    pending = "";
    return false;
  }
}

async function answerCompletion(
  res: Response,
  completions: CompletionService,
  request: CompletionRequest,
  meta: Meta,
  signal: AbortLike,
  promptTokens: AwaitedLater<number>,
  outcome: Outcome,
): Promise<void> {
  let content = "";
  const finishReason = await completions.run(request, signal, {
    start() {},
    text(text) {
      content += text;
    },
    cached() {
      outcome.cacheHit = true;
    },
  });
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
  sendJson(res, 200, body);
}

function usageOf(prompt: number, completion: string) {
  const output = countTokens(completion);
  return { prompt_tokens: prompt, completion_tokens: output, total_tokens: prompt + output };
}
