import type { SseEvent } from "./sseEncoder";

/** A line or an event of a stream that is longer than its reader allows: the stream cannot be read safely. */
export class SseLimitExceeded extends Error {
  constructor(
    readonly what: "line" | "event",
    readonly maxChars: number,
  ) {
    super(`an SSE ${what} is longer than ${maxChars} characters`);
    this.name = "SseLimitExceeded";
  }
}

/**
 * Turns byte chunks into lines. Handles `\n`, `\r\n` and a lone `\r`, a CRLF split across two chunks,
 * and UTF-8 sequences split across chunks. A line longer than `maxChars` throws SseLimitExceeded as soon as that
 * much of it has arrived, so a sender that never ends its line cannot make the reader hold it all.
 */
export class LineDecoder {
  /** Made on the first byte chunk: a caller that decodes its own bytes (and passes strings) never pays for one. */
  private text: InstanceType<typeof TextDecoder> | undefined;
  private buffer = "";
  private pendingCR = false;

  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  private checked(lines: string[]): string[] {
    if (this.buffer.length > this.maxChars) throw new SseLimitExceeded("line", this.maxChars);
    for (const line of lines) if (line.length > this.maxChars) throw new SseLimitExceeded("line", this.maxChars);
    return lines;
  }

  decode(chunk: Uint8Array | string): string[] {
    let input =
      typeof chunk === "string" ? chunk : (this.text ??= new TextDecoder("utf-8")).decode(chunk, { stream: true });
    // An empty chunk (or one holding only part of a UTF-8 sequence) must not forget a CR awaiting its LF.
    if (input === "") return [];
    if (this.pendingCR && input.charCodeAt(0) === 10) input = input.slice(1);
    this.pendingCR = false;
    // A long line arriving in many chunks is collected without rescanning or flattening what came before,
    // so it costs linear time, not quadratic.
    const hasCR = input.includes("\r");
    if (!hasCR && !input.includes("\n")) {
      this.buffer += input;
      if (this.buffer.length > this.maxChars) throw new SseLimitExceeded("line", this.maxChars);
      return [];
    }
    const text = this.buffer + input;
    // Servers end lines with LF alone, and the buffer never holds a line break: the engine's split is much faster
    // than a scan.
    if (!hasCR) {
      const lines = text.split("\n");
      this.buffer = lines.pop() ?? "";
      return text.length > this.maxChars ? this.checked(lines) : lines;
    }
    const lines: string[] = [];
    let start = 0;
    for (let i = this.buffer.length; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      lines.push(text.slice(start, i));
      if (ch === 13) {
        if (i + 1 === text.length) this.pendingCR = true;
        else if (text.charCodeAt(i + 1) === 10) i++;
      }
      start = i + 1;
    }
    this.buffer = text.slice(start);
    return text.length > this.maxChars ? this.checked(lines) : lines;
  }

  flush(): string[] {
    const rest = this.buffer + (this.text?.decode() ?? "");
    this.buffer = "";
    return rest === "" ? [] : [rest];
  }
}

/**
 * Turns lines into events: joins multi-line `data:`, ignores `:` comments and unknown fields. An event whose data
 * lines add up to more than `maxChars` throws SseLimitExceeded.
 */
export class SseDecoder {
  private data: string[] = [];
  private dataChars = 0;
  private event: string | undefined;
  private id: string | undefined;

  constructor(private readonly maxChars = Number.POSITIVE_INFINITY) {}

  /** Returns a complete event when `line` is the blank line that ends one. */
  decode(line: string): SseEvent | undefined {
    if (line === "") {
      // The HTML standard's SSE parser ("dispatch the event") drops an event with no data lines, whatever else it named.
      if (this.data.length === 0) {
        this.event = undefined;
        return undefined;
      }
      // One data line is the usual event: its text as it is, without a join.
      const message: SseEvent = { data: this.data.length === 1 ? (this.data[0] as string) : this.data.join("\n") };
      if (this.event !== undefined) message.event = this.event;
      if (this.id !== undefined) message.id = this.id;
      // A new array: `length = 0` is a call into the runtime ("set length" in a CPU profile), dearer than this.
      this.data = [];
      this.dataChars = 0;
      this.event = undefined;
      return message;
    }
    // `data: …`, nearly every line a model server sends: the field and its value without slicing the field name.
    if (line.startsWith("data: ")) {
      this.pushData(line.slice(6));
      return undefined;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.pushData(value);
    else if (field === "event") this.event = value;
    else if (field === "id") this.id = value;
    return undefined;
  }

  private pushData(value: string): void {
    this.dataChars += value.length + 1;
    if (this.dataChars > this.maxChars) throw new SseLimitExceeded("event", this.maxChars);
    this.data.push(value);
  }
}

/** Reads a byte stream (a fetch body) as server-sent events. Breaking out of the loop cancels the stream. */
export async function* readSseEvents(
  body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
): AsyncGenerator<SseEvent> {
  const lines = new LineDecoder();
  const events = new SseDecoder();
  const iterable: AsyncIterable<Uint8Array> = Symbol.asyncIterator in body ? body : streamToIterable(body);
  for await (const chunk of iterable) {
    for (const line of lines.decode(chunk)) {
      const event = events.decode(line);
      if (event) yield event;
    }
  }
  for (const line of [...lines.flush(), ""]) {
    const event = events.decode(line);
    if (event) yield event;
  }
}

async function* streamToIterable(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
