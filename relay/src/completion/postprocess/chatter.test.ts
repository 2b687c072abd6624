import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { context, whole } from "./testing";

describe("postprocess: chat-model wrapping", () => {
  it("strips a lead-in line, the code fence and the explanation after it", () => {
    const output =
      "Sure! Here is the completion:\n```typescript\nreturn a + b;\n}\n```\nThis code returns the sum of a and b.";
    assert.equal(whole(context("function add(a, b) {\n  "), output).text, "return a + b;\n}");
  });

  it("strips a bare fence and blank lines after a lead-in", () => {
    assert.equal(whole(context("x = "), "Here's the code:\n\n```\n42\n```").text, "42");
    assert.equal(whole(context("x = "), "```python\n42\n```\n\nThe value is 42.").text, "42");
  });

  it("handles CRLF line breaks around fences", () => {
    assert.equal(whole(context("x = "), "```js\r\n1 +\r\n2\r\n```\r\nDone.").text, "1 +\r\n2");
  });

  it("keeps prose that merely starts like a lead-in", () => {
    const notes = context("Plan:\n", "", { surface: "notes" });
    assert.equal(
      whole(notes, "Here we go again, said Tom.\nAnd he left.").text,
      "Here we go again, said Tom.\nAnd he left.",
    );
    assert.equal(whole(notes, "Sure!").text, "Sure!");
    assert.equal(
      whole(context("Hi Ann,", "", { surface: "messages" }), " sure, I'll be there at five.").text,
      " sure, I'll be there at five.",
    );
  });

  it("keeps a fence naming a language at the start of a markdown note, but strips one after a lead-in", () => {
    const note = context("Example:\n", "", { surface: "notes", document_type: "markdown" });
    assert.equal(whole(note, "```python\nprint(1)\n```").text, "```python\nprint(1)\n```");
    assert.equal(whole(note, "Here is the completion:\n```python\nprint(1)\n```").text, "print(1)");
    assert.equal(whole(note, "```markdown\n- first\n- second\n```").text, "- first\n- second");
  });
});
