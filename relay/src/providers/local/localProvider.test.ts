import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { TAB_LIMITS, type TabContext, formatSnippets } from "@tab-relay/shared";
import { createLocalProvider, predictContinuation } from "./localProvider";
import type { CompletionInput } from "../types";

function context(before: string, extra: Partial<TabContext> = {}): TabContext {
  return {
    surface: "code",
    workspace_slug: "acme",
    entity_id: "file-1",
    document_type: "plaintext",
    active_text_before_cursor: before,
    ...extra,
  };
}

async function collect(input: CompletionInput, signal = new AbortController().signal): Promise<string[]> {
  const fragments: string[] = [];
  await createLocalProvider().complete(input, signal, (fragment) => {
    fragments.push(fragment);
  });
  return fragments;
}

const ADD = "function add(a, b) {\n  return a + b;\n}\n";

describe("local engine: predicting from the document", () => {
  it("continues a repeated code pattern with what followed it earlier", () => {
    const before = `${ADD}\nconst sum = add(1, 2);\n\nfunction add(a, b) {`;
    assert.equal(predictContinuation(context(before), 100), "\n  return a + b;\n}");
  });

  it("follows the longest earlier match rather than a shorter, more recent one", () => {
    const before = "server.listen(port, host);\nclient.listen(retry);\nserver.listen(";
    assert.equal(predictContinuation(context(before), 100), "port, host);");
  });

  it("takes the most recent of equally long matches", () => {
    const before = "log('first');\nlog('second');\nlog(";
    assert.equal(predictContinuation(context(before), 100), "'second');");
  });

  it("predicts from the surrounding context when the file itself has no match", () => {
    const surrounding =
      "import { readFileSync } from 'node:fs';\nconst raw = readFileSync(path, 'utf8');\nexport const config = JSON.parse(raw);\n";
    const prediction = predictContinuation(
      context("let text = '';\nconst raw = readF", { surrounding_context: surrounding }),
      100,
    );
    assert.equal(prediction, "ileSync(path, 'utf8');\nexport const config = JSON.parse(raw);");
  });

  it("ends a continuation from the surrounding context with its snippet, before the next file's header", () => {
    const surrounding = formatSnippets([
      { path: "src/stats.ts", text: "const total = sum(values);\nreport(total);" },
      { path: "src/other.ts", text: "unrelated(code);\nmore();" },
    ]);
    const extra = { surrounding_context: surrounding };
    assert.equal(
      predictContinuation(context("let x = 1;\nconst total = ", extra), 100),
      "sum(values);\nreport(total);",
    );
    // The match reaches the end of a snippet: the next one's header is not what follows.
    assert.equal(
      predictContinuation(context("let x = 1;\nconst total = sum(values);\nreport(total);\n", extra), 100),
      "",
    );
  });

  it("runs on over a line of a snippet that only looks like a header", () => {
    const surrounding = formatSnippets([
      { path: "notes.ts", text: "const banner = load();\n--- file: fake.ts ---\nshow(banner);" },
    ]);
    assert.equal(
      predictContinuation(context("x();\nconst banner = ", { surrounding_context: surrounding }), 100),
      "load();\n --- file: fake.ts ---\nshow(banner);",
    );
  });

  it("completes a partial word from the document's most frequent matching word", () => {
    const before = "resolve(x);\nresolve(y);\nconst result = 1;\nawait res";
    assert.equal(predictContinuation(context(before), 100), "olve");
  });

  it("breaks a frequency tie between words by the one nearest the cursor", () => {
    const before = "const reader = open();\nconst response = fetch();\nre";
    assert.equal(predictContinuation(context(before), 100), "sponse");
  });

  it("does not complete a word the cursor sits inside, nor a one-letter prefix", () => {
    assert.equal(predictContinuation(context("resolve(x);\nres", { active_text_after_cursor: "ult" }), 100), "");
    assert.equal(predictContinuation(context("resolve(x);\nr"), 100), "");
  });
});

describe("local engine: weighing the places that look like the cursor", () => {
  it("suggests what equally good places agree on, up to where they part ways", () => {
    const before =
      "let x = f(y);\nconst a = load(config, options.alpha);\nconst b = load(config, options.beta);\nconst c = load(";
    assert.equal(predictContinuation(context(before), 100), "config, options.");
  });

  it("prefers the document to another file's snippet that matches as much visible text", () => {
    // The snippet's match runs over more indentation, so it is longer, but it saw no more code.
    const surrounding = formatSnippets([{ path: "src/other.ts", text: "a\n  const total = sum(rows);" }]);
    const before = "let y = 2; const total = sum(values);\nlet x = 1;\n  const total = sum(";
    assert.equal(
      predictContinuation(context(before, { surrounding_context: surrounding, file_path: "src/app.ts" }), 100),
      "values);",
    );
  });

  it("does not go on with deeper indentation at the end of a line's indentation", () => {
    const before = "function a() {\n  call();\n    more();\n  done();\n}\nfunction b() {\n  call();\n  ";
    assert.equal(predictContinuation(context(before), 100), "");
  });
});

describe("local engine: code that repeats with a name changed", () => {
  it("writes the block for a new name from the block of an earlier one, renaming inside longer names and strings too", () => {
    const before =
      'export const ZodUnknown = make("ZodUnknown", (inst) => {\n  core.$ZodUnknown.init(inst);\n  inst.kind = "unknown";\n});\n' +
      'export const ZodNever = make("ZodNever", (inst) => {\n  ';
    assert.equal(predictContinuation(context(before), 100), 'core.$ZodNever.init(inst);\n  inst.kind = "never";');
  });

  it("follows a parameter renamed from the function it was copied from", () => {
    const before = "function show(user) {\n  print(user.name, user.email);\n}\n\nfunction showGroup(group) {\n  print(";
    assert.equal(predictContinuation(context(before), 100), "group.name, group.email);");
  });

  it("renames from another file's snippet as from the document", () => {
    const surrounding = formatSnippets([
      {
        path: "src/users.ts",
        text: "export function loadUser(store, id) {\n  return store.user.get(id).then(toUser);\n}",
      },
    ]);
    const before = "export function loadGroup(store, id) {\n  return store.";
    assert.equal(
      predictContinuation(context(before, { surrounding_context: surrounding }), 100),
      "group.get(id).then(toGroup);",
    );
  });
});

describe("local engine: where a suggestion stops", () => {
  const earlier = "Meeting notes: we agreed to ship on Friday\nand to review the plan.\n\nNext topic.\n\n";

  it("stops at the end of the line on single-line surfaces", () => {
    for (const surface of ["messages", "tasks", "calendar"]) {
      const extra = surface === "tasks" ? { surface, taskboard_file_id: "board" } : { surface };
      assert.equal(
        predictContinuation(context(`${earlier}Meeting notes: we agreed`, extra), 100),
        " to ship on Friday",
        surface,
      );
    }
  });

  it("stops at the end of the paragraph in notes, docs and other surfaces", () => {
    for (const surface of ["notes", "docs", "email"]) {
      const prediction = predictContinuation(context(`${earlier}Meeting notes: we agreed`, { surface }), 100);
      assert.equal(prediction, " to ship on Friday\nand to review the plan.", surface);
    }
  });

  it("stops code where the indentation leaves the cursor's block", () => {
    const body = "  if (ready) {\n    start();\n    report();\n  }\n  cleanup();\n}\n";
    const before = `function run() {\n${body}\nfunction again() {\n  if (ready) {\n    sta`;
    assert.equal(predictContinuation(context(before), 100), "rt();\n    report();");
  });

  it("stops code at a blank line followed by a line at the cursor's indentation", () => {
    const before = "const a = load();\nconst b = parse(a);\n\nsend(b);\nconst a = load();\nconst b = pa";
    assert.equal(predictContinuation(context(before), 100), "rse(a);");
  });

  it("keeps a continuation within about maxTokens", () => {
    const line = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma";
    const prediction = predictContinuation(context(`${line}\n\nalpha beta`, { surface: "notes" }), 5);
    assert.ok(prediction.length > 0 && prediction.length <= 20, JSON.stringify(prediction));
    assert.ok(line.startsWith(`alpha beta${prediction}`));
  });
});

describe("local engine: text already after the cursor", () => {
  it("proposes nothing when the continuation is exactly what follows the cursor", () => {
    const before = `${ADD}\nfunction add(a, b) {`;
    assert.equal(predictContinuation(context(before, { active_text_after_cursor: "\n  return a + b;\n}\n" }), 100), "");
  });

  it("stops before a closing bracket that is already after the cursor", () => {
    const before = "draw(canvas, width, height);\nresize(canvas);\ndraw(canv";
    assert.equal(predictContinuation(context(before, { active_text_after_cursor: ");\n" }), 100), "as, width, height");
  });

  it("proposes nothing that is a near-copy of the text after the cursor", () => {
    const before = "I like apples and bananas.\nYou like ";
    assert.equal(
      predictContinuation(context(before, { surface: "notes", active_text_after_cursor: "apples and pears." }), 100),
      "",
    );
  });

  it("keeps to one line when words follow the cursor on its line", () => {
    const before = "first item: 1,\nsecond item: 2,\nthird item: 3,\n\nfirst item: ";
    assert.equal(
      predictContinuation(context(before, { surface: "notes", active_text_after_cursor: " // edited" }), 100),
      "1,",
    );
    assert.equal(
      predictContinuation(context(before, { surface: "notes" }), 100),
      "1,\nsecond item: 2,\nthird item: 3,",
    );
  });

  it("stops before the next line when the continuation would repeat it", () => {
    const before = `${ADD}\nfunction add(a, b) {`;
    assert.equal(predictContinuation(context(before, { active_text_after_cursor: "\n}\n" }), 100), "\n  return a + b;");
  });
});

describe("local engine: provider behaviour", () => {
  it("is deterministic and streams the same text in several fragments", async () => {
    const before = `${ADD}\nfunction add(a, b) {`;
    const input = { context: context(before), maxTokens: 100, temperature: 0.5 };
    const first = await collect(input);
    const second = await collect(input);
    assert.deepEqual(first, second);
    assert.ok(first.length > 1, "several fragments");
    assert.equal(first.join(""), predictContinuation(input.context, 100));
  });

  it("returns nothing, without error, for empty and very short input", async () => {
    for (const before of ["", "a", "ab", "\n"]) {
      const fragments = await collect({ context: context(before), maxTokens: 50, temperature: 0 });
      assert.deepEqual(fragments, [], JSON.stringify(before));
    }
  });

  it("rejects with the abort reason when aborted before it starts", async () => {
    const controller = new AbortController();
    const reason = new Error("client went away");
    controller.abort(reason);
    await assert.rejects(
      collect({ context: context(`${ADD}function add(`), maxTokens: 50, temperature: 0 }, controller.signal),
      reason,
    );
  });

  it("stops between fragments once aborted", async () => {
    const controller = new AbortController();
    const reason = new Error("superseded");
    const received: string[] = [];
    await assert.rejects(
      createLocalProvider().complete(
        { context: context(`${ADD}\nfunction add(a, b) {`), maxTokens: 50, temperature: 0 },
        controller.signal,
        (fragment) => {
          received.push(fragment);
          controller.abort(reason);
        },
      ),
      reason,
    );
    assert.equal(received.length, 1);
  });
});

describe("local engine: speed", () => {
  const require = createRequire(import.meta.url);
  const source = readFileSync(require.resolve("typescript/lib/lib.es5.d.ts"), "utf8");

  /** CPU time per call, so other processes competing for the two cores do not count against the engine. */
  function timeCalls(contexts: TabContext[]): { median: number; p90: number } {
    const times = contexts.map((ctx) => {
      const started = process.cpuUsage();
      predictContinuation(ctx, TAB_LIMITS.maxCompletionTokens);
      const used = process.cpuUsage(started);
      return (used.user + used.system) / 1000;
    });
    times.sort((a, b) => a - b);
    return {
      median: times[Math.floor(times.length / 2)] ?? Infinity,
      p90: times[Math.floor(times.length * 0.9)] ?? Infinity,
    };
  }

  it("answers a full-size context (16k before, 16k after, 32k surrounding) far inside the 5 ms goal", () => {
    const contexts = Array.from({ length: 200 }, (_, index) => {
      const cursor = 20_000 + index * 613;
      return context(source.slice(cursor - TAB_LIMITS.activeTextBeforeCursor, cursor), {
        active_text_after_cursor: source.slice(cursor, cursor + TAB_LIMITS.activeTextAfterCursor),
        surrounding_context: source.slice(cursor + 40_000, cursor + 40_000 + TAB_LIMITS.surroundingContext),
      });
    });
    assert.ok(contexts.every((ctx) => ctx.active_text_before_cursor.length === TAB_LIMITS.activeTextBeforeCursor));
    timeCalls(contexts.slice(0, 20));
    const { median, p90 } = timeCalls(contexts);
    // CPU time, not wall time, yet a suite running in parallel on 2 shared cores moved the median to 2.1 ms (CI,
    // 2026-11-28) through contended caches: the bound leaves room for that and still fails a doubling.
    assert.ok(median < 3, `median ${median.toFixed(3)} ms`);
    assert.ok(p90 < 5, `p90 ${p90.toFixed(3)} ms`);
  });

  it("stays linear on highly repetitive text, where naive substring search goes quadratic", () => {
    const run = "0x00, ".repeat(1400);
    const before = `${run}0x01, ${run}`.slice(-TAB_LIMITS.activeTextBeforeCursor);
    const ctx = context(before, {
      active_text_after_cursor: run.repeat(2).slice(0, 16_384),
      surrounding_context: run.repeat(4).slice(0, 32_768),
    });
    const { median } = timeCalls(Array.from({ length: 30 }, () => ctx));
    assert.ok(median < 5, `median ${median.toFixed(3)} ms`);
  });
});
