import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LineDecoder, SseDecoder, SseLimitExceeded, readSseEvents } from "./sseDecoder";
import { encodeSseEvent, type SseEvent } from "./sseEncoder";

const utf8 = new TextEncoder();

/** Every way to cut `bytes` into two chunks, plus one byte at a time. */
function splits(bytes: Uint8Array): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  for (let i = 0; i <= bytes.length; i++) out.push([bytes.slice(0, i), bytes.slice(i)]);
  out.push(Array.from(bytes, (byte) => Uint8Array.of(byte)));
  return out;
}

function decodeLines(chunks: Array<Uint8Array | string>): string[] {
  const decoder = new LineDecoder();
  return [...chunks.flatMap((chunk) => decoder.decode(chunk)), ...decoder.flush()];
}

function decodeEvents(chunks: Array<Uint8Array | string>): SseEvent[] {
  const lines = new LineDecoder();
  const events = new SseDecoder();
  const out: SseEvent[] = [];
  for (const line of [...chunks.flatMap((chunk) => lines.decode(chunk)), ...lines.flush(), ""]) {
    const event = events.decode(line);
    if (event) out.push(event);
  }
  return out;
}

async function* asyncChunks(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

async function collect(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const event of readSseEvents(body)) out.push(event);
  return out;
}

describe("encodeSseEvent", () => {
  test("writes event, id and data lines, then a blank line", () => {
    assert.equal(encodeSseEvent({ event: "error", id: "7", data: "{}" }), "event: error\nid: 7\ndata: {}\n\n");
    assert.equal(encodeSseEvent({ data: "[DONE]" }), "data: [DONE]\n\n");
  });

  test("splits multi-line data into one data line per line, whatever the line ending", () => {
    assert.equal(encodeSseEvent({ data: "a\nb\r\nc\rd" }), "data: a\ndata: b\ndata: c\ndata: d\n\n");
    assert.equal(encodeSseEvent({ data: "" }), "data: \n\n");
    assert.equal(encodeSseEvent({ data: "end\n" }), "data: end\ndata: \n\n");
  });

  test("rejects CR or LF in event and id, which would break the framing", () => {
    for (const bad of ["a\nb", "a\rb", "a\r\nb"]) {
      assert.throws(() => encodeSseEvent({ event: bad, data: "x" }), /event must not contain CR or LF/);
      assert.throws(() => encodeSseEvent({ id: bad, data: "x" }), /id must not contain CR or LF/);
    }
  });

  test("what it encodes, the decoder reads back", () => {
    const events: SseEvent[] = [
      { data: '{"choices":[{"delta":{"content":"héllo\\n"}}]}' },
      { event: "error", data: "line one\nline two\n\nafter a blank line" },
      { data: "" },
      { id: "42", data: "  leading spaces kept" },
    ];
    const wire = events.map(encodeSseEvent).join("");
    assert.deepEqual(decodeEvents([wire]), events);
  });
});

describe("LineDecoder", () => {
  test("splits on LF, CRLF and a lone CR", () => {
    assert.deepEqual(decodeLines(["a\nb\r\nc\rd\n"]), ["a", "b", "c", "d"]);
  });

  test("keeps empty lines, including two CRs in a row", () => {
    assert.deepEqual(decodeLines(["a\n\nb\r\rc\r\n\r\n"]), ["a", "", "b", "", "c", ""]);
  });

  test("a CRLF split across chunks is one line break, not two", () => {
    assert.deepEqual(decodeLines(["a\r", "\nb\n"]), ["a", "b"]);
    assert.deepEqual(decodeLines([utf8.encode("a\r"), utf8.encode("\nb\n")]), ["a", "b"]);
  });

  test("a CR at the end of a chunk followed by other text is a line break", () => {
    assert.deepEqual(decodeLines(["a\r", "b\n"]), ["a", "b"]);
  });

  test("an empty chunk between the CR and LF of a CRLF adds no blank line", () => {
    assert.deepEqual(decodeLines(["a\r", new Uint8Array(0), "\nb\n"]), ["a", "b"]);
    assert.deepEqual(decodeLines(["a\r", "", "\nb\n"]), ["a", "b"]);
  });

  test("flush returns an unterminated last line, and nothing when there is none", () => {
    assert.deepEqual(decodeLines(["a\npartial"]), ["a", "partial"]);
    assert.deepEqual(new LineDecoder().flush(), []);
  });

  test("gives the same lines however the bytes are cut, multi-byte characters included", () => {
    const text = "héllo wörld\r\n中文 😀\rlast\n\r\nend";
    const expected = ["héllo wörld", "中文 😀", "last", "", "end"];
    for (const chunks of splits(utf8.encode(text))) {
      assert.deepEqual(decodeLines(chunks), expected, `cut as ${chunks.map((chunk) => chunk.length).join("+")} bytes`);
    }
  });
});

describe("SseDecoder", () => {
  test("joins multi-line data with LF and dispatches at the blank line", () => {
    const decoder = new SseDecoder();
    assert.equal(decoder.decode("data: one"), undefined);
    assert.equal(decoder.decode("data: two"), undefined);
    assert.deepEqual(decoder.decode(""), { data: "one\ntwo" });
  });

  test("ignores comments and unknown fields", () => {
    assert.deepEqual(decodeEvents([": ping\n\n", "retry: 100\nfoo: bar\ndata: x\n: inside\n\n"]), [{ data: "x" }]);
  });

  test("strips exactly one space after the colon, and a field without a colon has an empty value", () => {
    assert.deepEqual(decodeEvents(["data:x\n\n", "data:  two spaces\n\n", "data\n\n"]), [
      { data: "x" },
      { data: " two spaces" },
      { data: "" },
    ]);
  });

  test("events one after another each hold only their own data lines, one line or several", () => {
    assert.deepEqual(
      decodeEvents(["data: a\n\ndata: b\ndata:c\n\ndata: \n\ndata:  d\ndata\n\nevent: x\ndata: e\n\ndata: f\n\n"]),
      [{ data: "a" }, { data: "b\nc" }, { data: "" }, { data: " d\n" }, { data: "e", event: "x" }, { data: "f" }],
    );
  });

  test("data lines count against the event's limit whichever way the field is written", () => {
    for (const lines of [
      ["data: 12345", "data: 6"],
      ["data:12345", "data:6"],
      ["data: 12345", "data:6"],
    ]) {
      const decoder = new SseDecoder(7);
      decoder.decode(lines[0] as string);
      assert.throws(() => decoder.decode(lines[1] as string), SseLimitExceeded);
    }
  });

  test("blank lines with nothing pending dispatch nothing", () => {
    assert.deepEqual(decodeEvents(["\n\n\n"]), []);
  });

  test("the id is kept for later events, like EventSource's last event id", () => {
    assert.deepEqual(decodeEvents(["id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n"]), [
      { id: "1", data: "a" },
      { id: "1", data: "b" },
      { id: "2", data: "c" },
    ]);
  });

  test("the event name applies to one event only", () => {
    assert.deepEqual(decodeEvents(["event: error\ndata: a\n\ndata: b\n\n"]), [
      { event: "error", data: "a" },
      { data: "b" },
    ]);
  });

  test("a long line arriving in many small chunks is read in linear time", () => {
    const decoder = new LineDecoder();
    const piece = new TextEncoder().encode("x".repeat(1024));
    const started = performance.now();
    for (let i = 0; i < 2048; i++) assert.deepEqual(decoder.decode(piece), []);
    const lines = decoder.decode("\n");
    assert.equal(lines[0]?.length, 2 * 1024 * 1024);
    // Rescanning the buffer on every chunk took seconds for this 2 MB line; one pass takes milliseconds.
    assert.ok(performance.now() - started < 500, `took ${performance.now() - started} ms`);
  });

  test("drops an event that has no data line, and does not carry its name into the next event", () => {
    assert.deepEqual(decodeEvents(["event: ping\n\ndata: x\n\n"]), [{ data: "x" }]);
  });

  test("gives the same events however the bytes are cut, across CRLF, comments and UTF-8", () => {
    const wire = ': hello\r\nevent: delta\r\ndata: {"t":"é"}\r\ndata: 😀 second\r\n\r\ndata: [DONE]\r\n\r\n';
    const expected: SseEvent[] = [{ event: "delta", data: '{"t":"é"}\n😀 second' }, { data: "[DONE]" }];
    for (const chunks of splits(utf8.encode(wire))) {
      assert.deepEqual(decodeEvents(chunks), expected, `cut as ${chunks.map((chunk) => chunk.length).join("+")} bytes`);
    }
  });
});

describe("readSseEvents", () => {
  const wire = utf8.encode('data: {"a":1}\n\nevent: error\ndata: {"error":{}}\n\ndata: [DONE]\n\n');
  const expected: SseEvent[] = [{ data: '{"a":1}' }, { event: "error", data: '{"error":{}}' }, { data: "[DONE]" }];

  test("reads an async iterable of byte chunks", async () => {
    for (const chunks of splits(wire)) assert.deepEqual(await collect(asyncChunks(chunks)), expected);
  });

  test("reads a ReadableStream of byte chunks", async () => {
    for (const chunks of splits(wire)) {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      });
      assert.deepEqual(await collect(stream), expected);
    }
  });

  test("dispatches a last event that lacks its blank line when the stream ends", async () => {
    assert.deepEqual(await collect(asyncChunks([utf8.encode("data: tail")])), [{ data: "tail" }]);
  });

  test("breaking out of the loop cancels the ReadableStream", async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(utf8.encode("data: more\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    let seen = 0;
    for await (const event of readSseEvents(stream)) {
      assert.equal(event.data, "more");
      if (++seen === 3) break;
    }
    assert.equal(cancelled, true);
  });
});

test("a line longer than the decoder allows throws once that much has arrived, however it is split (issue 19)", () => {
  const lines = new LineDecoder(1000);
  lines.decode("data: ");
  assert.throws(() => {
    for (let i = 0; i < 100; i++) lines.decode("x".repeat(100));
  }, SseLimitExceeded);
  assert.throws(() => new LineDecoder(10).decode(`${"y".repeat(20)}\nok\n`), SseLimitExceeded);
  assert.deepEqual(new LineDecoder(10).decode("short\r\nlines\n"), ["short", "lines"]);
});

test("an event whose data lines add up past the limit throws; a shorter one decodes", () => {
  const events = new SseDecoder(50);
  assert.throws(() => {
    for (let i = 0; i < 10; i++) events.decode(`data: ${"z".repeat(10)}`);
  }, SseLimitExceeded);
  const fresh = new SseDecoder(50);
  fresh.decode("data: hello");
  assert.deepEqual(fresh.decode(""), { data: "hello" });
});
