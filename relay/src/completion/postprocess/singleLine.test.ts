import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { context, whole } from "./testing";

describe("postprocess: single-line surfaces", () => {
  it("stops messages, tasks and calendar at the first line break after some content", () => {
    for (const surface of ["messages", "tasks", "calendar"]) {
      const extra = surface === "tasks" ? { surface, taskboard_file_id: "board" } : { surface };
      const result = whole(context("Hi Bob, ", "", extra), "see you at noon.\nBest,\nAnn");
      assert.deepEqual(result, { text: "see you at noon.", finishReason: "stop" }, surface);
    }
  });

  it("keeps several lines on other surfaces", () => {
    assert.equal(
      whole(context("Hi Bob, ", "", { surface: "email" }), "see you at noon.\nBest,\nAnn").text,
      "see you at noon.\nBest,\nAnn",
    );
  });
});
