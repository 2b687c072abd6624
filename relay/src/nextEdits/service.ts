import { type NextEdit, NextEditRequest, type NoNextEditReason, type RecentEdit, RelayError } from "@tab-relay/shared";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import { type HttpPost, UpstreamSilence } from "../providers/httpPost";
import { JSON_SHAPE_LIMITS, jsonShapeProblem } from "../jsonShape";
import { type NextEditDocument, documentOf, mapLines } from "./document";
import { type FormatInput, type NextEditFormatName, nextEditFormat } from "./formats";
import { type Judgement, isNoChangeMarker, judgeRewrite } from "./guards";
import { proposeLocalNextEdit } from "./localEngine";
import { neutraliseControlTokens } from "../completion/controlTokens";

export interface NextEditAnswer {
  edits: NextEdit[];
  reason?: NoNextEditReason;
}

export interface NextEditService {
  /** The source that answers: `local`, or the format spoken to the team's model. */
  readonly source: string;
  /** The model named in answers: the upstream model, or `local`. */
  readonly model: string;
  /** Rejects with a RelayError (UPSTREAM_ERROR, UPSTREAM_TIMEOUT) or the abort reason. */
  run(request: NextEditRequest, signal: AbortSignal): Promise<NextEditAnswer>;
  /**
   * Reads WARM_UP_REQUEST as the route does (the request's schema) and, with the local engine, proposes on it,
   * counting nothing and sending nothing anywhere. Called once after the relay listens, so the first next edit does
   * not pay for that code's first run (zod compiles an object schema's parser on its first parse): in the real
   * VS Code e2e the relay's first next edit took 24 to 86 ms and the next ones 2 to 3 ms.
   */
  warm(): void;
}

/** A rename as a client sends it (`sum` renamed `priceSum` on its first line): the local engine proposes on it. */
export const WARM_UP_REQUEST: NextEditRequest = {
  workspace_slug: "warm-up",
  file_path: "warm-up.js",
  code_language: "javascript",
  document_version: 1,
  excerpt: {
    start_line: 0,
    text: [
      "function total(items) {",
      "  let priceSum = 0;",
      "  for (const item of items) sum += item.price;",
      "  return sum;",
      "}",
    ].join("\n"),
  },
  editable_region: { start_line: 0, end_line: 5 },
  cursor: { line: 1, character: 14 },
  recent_edits: [
    { file_path: "warm-up.js", start_line: 1, old_lines: ["  let sum = 0;"], new_lines: ["  let priceSum = 0;"] },
  ],
};

export interface NextEditUpstream {
  url: string;
  model: string;
  apiKey?: string | undefined;
  timeoutMs: number;
  /** TAB_RELAY_UPSTREAM_DEADLINE_MS: the longest one answer may take, however steadily it arrives. */
  deadlineMs: number;
  /** TAB_RELAY_NEXT_EDIT_FORMAT; otherwise chosen from the model's name. */
  format?: NextEditFormatName | undefined;
}

/** A model's answer is read whole; more than this is not a rewritten region. */
const MAX_ANSWER_BYTES = 1_048_576;

export function createNextEditService(deps: {
  upstream?: NextEditUpstream | undefined;
  post: HttpPost;
  metrics: Pick<Metrics, "nextEdits" | "upstreamLimits">;
  logger: Logger;
}): NextEditService {
  const { upstream, metrics } = deps;
  if (!upstream) {
    return {
      source: "local",
      model: "local",
      async run(request) {
        const judgement = proposeLocalNextEdit(documentOf(request), request.recent_edits).judgement;
        return answer("local", judgement);
      },
      warm() {
        const request = NextEditRequest.parse(WARM_UP_REQUEST);
        proposeLocalNextEdit(documentOf(request), request.recent_edits);
      },
    };
  }
  const format = nextEditFormat(upstream.model, upstream.format);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (upstream.apiKey) headers["authorization"] = `Bearer ${upstream.apiKey}`;

  function answer(source: string, judgement: Judgement): NextEditAnswer {
    const outcome = "edits" in judgement ? "edits" : judgement.reason;
    metrics.nextEdits.inc({ source, outcome });
    return "edits" in judgement ? { edits: judgement.edits } : { edits: [], reason: judgement.reason };
  }

  return {
    source: format.name,
    model: upstream.model,
    warm() {
      NextEditRequest.parse(WARM_UP_REQUEST);
    },
    async run(request, signal) {
      signal.throwIfAborted();
      const doc = documentOf(request);
      // The person's text goes to the model with its control tokens broken, so it cannot end a region early.
      const neutral = (text: string) => {
        const broken = neutraliseControlTokens(text).text;
        return format.neutralise ? format.neutralise(broken) : broken;
      };
      const shown = mapLines(doc, neutral);
      const changedLines = new Set<number>();
      shown.lines.forEach((line, i) => {
        if (line !== doc.lines[i]) changedLines.add(doc.firstLine + i);
      });
      const input: FormatInput = {
        doc: shown,
        recentEdits: request.recent_edits.map((edit) => neutralEdit(edit, neutral)),
        context: request.surrounding_context === undefined ? undefined : neutral(request.surrounding_context),
        model: upstream.model,
        maxTokens: maxTokensFor(shown),
      };
      const { url, body } = format.request(input, upstream.url);
      const reply = format.text(await postJson(deps.post, url, headers, body, signal, upstream, metrics));
      if (reply === undefined)
        throw new RelayError("UPSTREAM_ERROR", "Upstream answer holds no text where the format expects it");
      // A reply that is only a "no edit" marker, in any model's spelling, is an empty answer whatever the format.
      const parsed = isNoChangeMarker(reply) ? ({ kind: "no_change" } as const) : format.parse(reply);
      if (parsed.kind === "no_change") return answer(format.name, { reason: "no_change" });
      if (parsed.kind === "unparseable") {
        deps.logger.debug("next edit: unparseable model reply", { format: format.name, why: parsed.why });
        return answer(format.name, { reason: "unparseable" });
      }
      const judgement = judgeRewrite(shown, parsed.text);
      // An edit on a line whose control tokens were broken would write the broken form back into the file.
      if ("edits" in judgement && judgement.edits.some((edit) => touches(edit, changedLines)))
        return answer(format.name, { reason: "ambiguous" });
      return answer(format.name, judgement);
    },
  };
}

function neutralEdit(edit: RecentEdit, neutral: (text: string) => string): RecentEdit {
  return { ...edit, old_lines: edit.old_lines.map(neutral), new_lines: edit.new_lines.map(neutral) };
}

function touches(edit: NextEdit, lines: ReadonlySet<number>): boolean {
  for (let line = edit.range.start.line; line <= edit.range.end.line; line++) if (lines.has(line)) return true;
  return false;
}

/** Room for the region rewritten with some growth, at about 3 characters a token; never more than 2,048. */
function maxTokensFor(doc: NextEditDocument): number {
  let chars = 0;
  for (let line = doc.regionStart; line < doc.regionEnd; line++)
    chars += (doc.lines[line - doc.firstLine]?.length ?? 0) + 1;
  return Math.min(2_048, Math.ceil(chars / 2) + 256);
}

async function postJson(
  post: HttpPost,
  url: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
  outer: AbortSignal,
  { timeoutMs, deadlineMs }: Pick<NextEditUpstream, "timeoutMs" | "deadlineMs">,
  metrics: Pick<Metrics, "upstreamLimits">,
): Promise<unknown> {
  // A model server is not trusted (SECURITY.md): one that keeps sending a little within every idle timeout would
  // hold the request for as long as it liked, so the answer has the completions' deadline too.
  const limiter = new AbortController();
  const deadline = setTimeout(() => {
    metrics.upstreamLimits.inc({ limit: "deadline" });
    limiter.abort(
      new RelayError(
        "UPSTREAM_ERROR",
        `Upstream did not finish within ${deadlineMs} ms (the completion deadline, TAB_RELAY_UPSTREAM_DEADLINE_MS)`,
      ),
    );
  }, deadlineMs);
  const signal = AbortSignal.any([outer, limiter.signal]);
  const classify = (error: unknown): unknown => {
    if (outer.aborted) return outer.reason;
    if (limiter.signal.aborted) return limiter.signal.reason;
    if (error instanceof RelayError) return error;
    if (error instanceof UpstreamSilence)
      return new RelayError("UPSTREAM_TIMEOUT", `Upstream was silent for ${timeoutMs} ms`);
    return new RelayError("UPSTREAM_ERROR", "Upstream connection failed", { cause: error });
  };
  try {
    const response = await post(url, { headers, body: JSON.stringify(body), signal, idleTimeoutMs: timeoutMs });
    const decoder = new TextDecoder();
    let text = "";
    let bytes = 0;
    let tooLong = false;
    await response.read((chunk) => {
      bytes += chunk.byteLength;
      if (bytes > MAX_ANSWER_BYTES) {
        tooLong = true;
        return "drop";
      }
      text += decoder.decode(chunk, { stream: true });
      return undefined;
    });
    text += decoder.decode();
    if (tooLong) throw new RelayError("UPSTREAM_ERROR", `Upstream answer is over ${MAX_ANSWER_BYTES} bytes`);
    if (response.status < 200 || response.status > 299) {
      const said = text.replace(/\s+/g, " ").trim().slice(0, 200);
      throw new RelayError("UPSTREAM_ERROR", `Upstream answered ${response.status}${said ? `: ${said}` : ""}`);
    }
    if (jsonShapeProblem(text) !== undefined) {
      metrics.upstreamLimits.inc({ limit: "json" });
      throw new RelayError(
        "UPSTREAM_ERROR",
        `Upstream sent JSON nested more than ${JSON_SHAPE_LIMITS.maxDepth} deep or holding more than ${JSON_SHAPE_LIMITS.maxValues} values, too costly to parse; a next edit needs neither`,
      );
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new RelayError("UPSTREAM_ERROR", `Upstream sent malformed JSON: ${text.slice(0, 200)}`);
    }
  } catch (error) {
    throw classify(error);
  } finally {
    clearTimeout(deadline);
  }
}
