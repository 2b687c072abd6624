import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ACCEPTED_FIELDS, CompletionRequest, TabContext, acceptCompletionRequest } from "./completion";
import { TAB_LIMITS } from "./limits";
import { describeZodError } from "./validation";

function body(context: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    tab_context: {
      surface: "code",
      workspace_slug: "acme",
      entity_id: "src/main.ts",
      document_type: "plaintext",
      active_text_before_cursor: "const x = ",
      ...context,
    },
    ...extra,
  };
}

function failure(input: unknown): string {
  const result = CompletionRequest.safeParse(input);
  if (result.success) assert.fail("expected the request to be rejected");
  return describeZodError(result.error, undefined, { input });
}

describe("CompletionRequest", () => {
  test("accepts the five required tab_context fields alone", () => {
    const parsed = CompletionRequest.parse(body());
    assert.equal(parsed.tab_context.surface, "code");
    assert.equal(parsed.max_completion_tokens, undefined);
  });

  test("rejects a body without tab_context", () => {
    assert.equal(failure({ model: "tab-v1" }), "tab_context is required");
  });

  for (const field of ["surface", "workspace_slug", "entity_id", "document_type", "active_text_before_cursor"]) {
    test(`rejects a tab_context without ${field}, naming the field`, () => {
      assert.equal(failure(body({ [field]: undefined })), `tab_context.${field} is required`);
    });
  }

  test("a field of the wrong type keeps zod's detail after its name; null is not absent", () => {
    assert.equal(
      failure(body({ entity_id: 42 })),
      "tab_context.entity_id: Invalid input: expected string, received number",
    );
    assert.equal(
      failure(body({ entity_id: null })),
      "tab_context.entity_id: Invalid input: expected string, received null",
    );
    assert.equal(failure({ model: "tab-v1" }), "tab_context is required");
  });

  test("without the input, an absent field is told from zod's wording", () => {
    const result = CompletionRequest.safeParse(body({ entity_id: undefined, surface: 1 }));
    assert.ok(!result.success);
    assert.equal(
      describeZodError(result.error),
      "tab_context.surface: Invalid input: expected string, received number; tab_context.entity_id is required",
    );
  });

  test("an empty text before the cursor is allowed; an empty or blank surface is not", () => {
    assert.ok(CompletionRequest.safeParse(body({ active_text_before_cursor: "" })).success);
    assert.match(failure(body({ surface: "" })), /tab_context\.surface/);
    assert.match(failure(body({ surface: "   " })), /tab_context\.surface/);
  });

  test("document_type is plaintext or markdown and nothing else", () => {
    assert.ok(CompletionRequest.safeParse(body({ document_type: "plaintext" })).success);
    assert.ok(CompletionRequest.safeParse(body({ document_type: "markdown" })).success);
    for (const other of ["html", "Markdown", "", 1])
      assert.match(failure(body({ document_type: other })), /tab_context\.document_type/);
  });

  test("tasks need a taskboard_file_id; other surfaces don't", () => {
    assert.match(failure(body({ surface: "tasks" })), /tab_context\.taskboard_file_id: taskboard_file_id is required/);
    assert.match(failure(body({ surface: " tasks " })), /taskboard_file_id/, "the surface is trimmed before the check");
    assert.ok(CompletionRequest.safeParse(body({ surface: "tasks", taskboard_file_id: "board-1" })).success);
    assert.ok(CompletionRequest.safeParse(body({ surface: "notes" })).success);
  });

  test("the limits are the documented ones: 16,384 before, 16,384 after, 32,768 of context, 500 tokens", () => {
    assert.deepEqual(
      { ...TAB_LIMITS },
      {
        activeTextBeforeCursor: 16_384,
        activeTextAfterCursor: 16_384,
        surroundingContext: 32_768,
        maxCompletionTokens: 500,
      },
    );
  });

  const sized: Array<[string, number]> = [
    ["active_text_before_cursor", 16_384],
    ["active_text_after_cursor", 16_384],
    ["surrounding_context", 32_768],
  ];
  for (const [field, limit] of sized) {
    test(`${field} may be exactly ${limit} characters but not one more`, () => {
      assert.ok(CompletionRequest.safeParse(body({ [field]: "x".repeat(limit) })).success);
      assert.match(failure(body({ [field]: "x".repeat(limit + 1) })), new RegExp(`^tab_context\\.${field}: `));
    });
  }

  test("max_completion_tokens is an integer from 1 to 500", () => {
    for (const ok of [1, 250, 500])
      assert.equal(CompletionRequest.parse(body({}, { max_completion_tokens: ok })).max_completion_tokens, ok);
    for (const bad of [0, -1, 501, 1.5, "10"])
      assert.match(failure(body({}, { max_completion_tokens: bad })), /^max_completion_tokens: /);
  });

  test("unknown fields, such as the messages the openai SDK sends, are ignored and dropped", () => {
    const parsed = CompletionRequest.parse(body({ cursor_line: 3 }, { messages: [], temperature: 0.9, user: "ada" }));
    assert.ok(!("messages" in parsed));
    assert.ok(!("temperature" in parsed));
    assert.ok(!("cursor_line" in parsed.tab_context));
  });

  test("stream_options may be null, as some clients send it", () => {
    assert.ok(CompletionRequest.safeParse(body({}, { stream: true, stream_options: null })).success);
    assert.ok(CompletionRequest.safeParse(body({}, { stream: true, stream_options: { include_usage: true } })).success);
  });
});

describe("acceptCompletionRequest", () => {
  test("knows every field of the schemas, in their order, so a new field is never dropped by the fast path", () => {
    assert.deepEqual([...ACCEPTED_FIELDS.request], Object.keys(CompletionRequest.shape));
    assert.deepEqual([...ACCEPTED_FIELDS.tabContext], Object.keys(TabContext.shape));
  });

  /** Zod's answer and the fast path's agree: the same value with the same key order, or the fast path declines. */
  function agrees(input: unknown): "accepted" | "declined" {
    const fast = acceptCompletionRequest(input);
    const result = CompletionRequest.safeParse(input);
    if (fast === undefined) return "declined";
    assert.ok(result.success, `accepted what zod refuses: ${JSON.stringify(input)}`);
    assert.deepEqual(fast, result.data);
    assert.equal(JSON.stringify(fast), JSON.stringify(result.data));
    return "accepted";
  }

  test("accepts the extension's and the openai SDK's bodies with zod's result", () => {
    assert.equal(agrees(body()), "accepted");
    assert.equal(
      agrees(
        body(
          { code_language: "typescript", file_path: "src/a.ts", active_text_after_cursor: "\n}", surface: "  code\t" },
          {
            stream: true,
            model: "tab-v1",
            stream_options: { include_usage: true, other: 1 },
            messages: [],
            max_completion_tokens: 64,
            tab_raw_text: false,
          },
        ),
      ),
      "accepted",
    );
    assert.equal(agrees(body({}, { stream_options: null, max_completion_tokens: 500 })), "accepted");
    assert.equal(agrees(body({ document_type: "markdown", surface: "tasks", taskboard_file_id: "t1" })), "declined");
  });

  test("declines whatever zod refuses, and agrees with it on every generated body", () => {
    const strings = [
      "",
      " ",
      "x",
      "tasks",
      " tasks ",
      "plaintext",
      "markdown",
      "a".repeat(64),
      "a".repeat(65),
      "b".repeat(128),
      "b".repeat(129),
      "c".repeat(2049),
      "d".repeat(TAB_LIMITS.activeTextBeforeCursor + 1),
    ];
    const values: unknown[] = [...strings, undefined, null, 0, 1, 1.5, 500, 501, -1, true, false, [], {}, ["x"]];
    const keys = [
      "model",
      "stream",
      "stream_options",
      "max_completion_tokens",
      "tab_raw_text",
      "surface",
      "workspace_slug",
      "entity_id",
      "document_type",
      "active_text_before_cursor",
      "active_text_after_cursor",
      "surrounding_context",
      "code_language",
      "file_path",
      "block_kind",
      "note_title",
      "document_title",
      "taskboard_file_id",
    ];
    const counts = { accepted: 0, declined: 0 };
    // Every field set to every value (or removed), one at a time, then random combinations.
    for (const key of keys)
      for (const value of values) {
        const input = body();
        const into = keys.indexOf(key) < 5 ? input : (input["tab_context"] as Record<string, unknown>);
        if (value === undefined) delete into[key];
        else into[key] = value;
        agrees(input);
        if (key === "stream_options") agrees({ ...input, stream_options: { include_usage: value } });
      }
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let i = 0; i < 4000; i++) {
      const input = body();
      const context = input["tab_context"] as Record<string, unknown>;
      for (let j = random(3); j >= 0; j--) {
        const key = keys[random(keys.length)] as string;
        const into = keys.indexOf(key) < 5 ? input : context;
        const value =
          key === "stream_options" && random(2) === 0
            ? { include_usage: values[random(values.length)] }
            : values[random(values.length)];
        if (value === undefined && random(2) === 0) delete into[key];
        else into[key] = value;
      }
      if (random(20) === 0) input["tab_context"] = values[random(values.length)];
      counts[agrees(JSON.parse(JSON.stringify(input)))]++;
    }
    assert.ok(counts.accepted > 200 && counts.declined > 2000, JSON.stringify(counts));
    for (const odd of [null, [], "x", Object.create(null), { ...body(), model: undefined }, new Map()]) agrees(odd);
  });
});
