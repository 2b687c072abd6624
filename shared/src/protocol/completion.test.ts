import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CompletionRequest } from "./completion";
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
