import type { FinishReason, TabContext } from "@tab-relay/shared";
import { SINGLE_LINE_SURFACES, isHighSurrogate } from "../text";
import { ChatterFilter } from "./chatter";
import { SingleLineStop } from "./singleLine";
import type { Stage } from "./stage";
import { StopSequenceStop } from "./stopSequences";
import { SuffixOverlapStop } from "./suffixOverlap";
import { TokenLimit } from "./tokenLimit";
import { TypedPrefixFilter } from "./typedPrefix";

export interface PostprocessOptions {
  context: TabContext;
  maxTokens: number;
  /**
   * Tokens in `text`. Assumed no larger than its UTF-8 byte count and subadditive (count(a + b) <= count(a) +
   * count(b)), which holds for whitespace splitting and byte-level BPE; that lets most fragments pass unmeasured.
   */
  countTokens: (text: string) => number;
  /** Text that ends the output wherever it appears (a model's control tokens written as text); cut before it. */
  stops?: readonly string[];
  /**
   * False for a fill-in-the-middle model answering its own FIM prompt, which has no chat turn to wrap: the chat
   * wrapping filter (lead-ins, fences) is left out, since it holds back the first words of any output that could
   * still become "Sure!" or "Here is…", a token or more of latency on every completion. Default true.
   */
  chatWrapping?: boolean;
}

export interface Postprocessor {
  /** Feed the next raw fragment; returns the text that is now safe to emit (may be ""). */
  push(fragment: string): string;
  /** No more input: returns whatever is still held back and safe to emit. */
  end(): string;
  /** True once the output is complete (suffix reached, token limit, stop rule); the caller stops the upstream. */
  readonly done: boolean;
  readonly finishReason: FinishReason;
}

/**
 * Turns a provider's raw output into the suggestion: strips chat-model wrapping (lead-in lines, code fences,
 * explanations after the fence), drops a repeat of what was already typed, stops where the output reaches text
 * that is already after the cursor, keeps single-line surfaces to one line, and caps the output at `maxTokens`.
 */
export function createPostprocessor(options: PostprocessOptions): Postprocessor {
  const { context } = options;
  const before = context.active_text_before_cursor;
  const after = context.active_text_after_cursor ?? "";
  const limit = new TokenLimit(options.maxTokens, options.countTokens);
  const stages: Stage[] = [];
  // First, on the raw output: whatever follows a stop sequence is not the model's answer at all.
  if (options.stops && options.stops.length > 0) stages.push(new StopSequenceStop(options.stops));
  if (options.chatWrapping !== false) stages.push(new ChatterFilter(context));
  stages.push(new TypedPrefixFilter(before), new SuffixOverlapStop(before, after));
  if (SINGLE_LINE_SURFACES.has(context.surface)) stages.push(new SingleLineStop());
  stages.push(limit);

  let done = false;
  /** Half a surrogate pair, kept until its other half arrives so no fragment carries a broken character. */
  let carry = "";
  const run = (input: string, ending: boolean): string => {
    if (done) return "";
    let text = input;
    let finished = ending;
    for (const stage of stages) {
      text = stage.push(text);
      // A stopped stage has nothing more to give; everything after it sees the end of its input.
      if (stage.stopped) finished = true;
      else if (finished) text += stage.end();
    }
    done = finished;
    text = carry + text;
    carry = "";
    if (!finished && isHighSurrogate(text.charCodeAt(text.length - 1))) {
      carry = text.slice(-1);
      text = text.slice(0, -1);
    }
    return text;
  };

  return {
    push: (fragment) => (fragment === "" ? "" : run(fragment, false)),
    end: () => run("", true),
    get done() {
      return done;
    },
    get finishReason(): FinishReason {
      return limit.stopped ? "length" : "stop";
    },
  };
}
