import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSnippets, snippetHeader } from "@tab-relay/shared";
import { RecentFiles, changeAt, type FileDescriptor } from "./recentFiles";
import { EDIT_MAX_AGE_MS, MAX_WINDOWS_PER_FILE, type RelatedContextRequest } from "./relatedContext";
import { FakeClock } from "./testing";

const file = (path: string): FileDescriptor => ({ uri: `file:///work/${path}`, path, scheme: "file" });
const uri = (path: string) => `file:///work/${path}`;

/** A request from the end of `query`, in a document that is not held unless `active` says so. */
function request(query: string, overrides: Partial<RelatedContextRequest> = {}): RelatedContextRequest {
  return {
    uri: uri("src/current.ts"),
    path: "src/current.ts",
    cursorLine: 0,
    linesBefore: 0,
    linesAfter: 0,
    query,
    budget: 6_000,
    ...overrides,
  };
}

/** `count` lines of code about one topic, each line using the topic's names. */
function topic(name: string, count = 10): string {
  return Array.from(
    { length: count },
    (_, i) =>
      `export function ${name}Step${i}(${name}Input: ${name}Options) { return ${name}Helper(${name}Input, ${i}); }`,
  ).join("\n");
}

const invoiceQuery = "const invoice = invoiceHelper(invoiceInput, invoiceOptions);\nconst total = invoiceStep3(";

test("the window that shares identifiers with the code at the cursor wins over an unrelated one", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/invoice.ts"), topic("invoice"));
  files.open(file("src/colors.ts"), `${topic("palette")}\n// invoice`);
  const context = files.relatedContext(request(invoiceQuery, { budget: 1_400 }));
  assert.deepEqual(
    context.snippets.map((s) => s.path),
    ["src/invoice.ts"],
  );
  assert.ok((context.snippets[0]?.score ?? 0) > 0.1);
});

test("a removed file is never sent, and an edited file is ranked by what it holds now", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/invoice.ts"), topic("invoice"));
  const palette = topic("palette");
  files.open(file("src/palette.ts"), palette);
  files.remove(uri("src/invoice.ts"));
  assert.deepEqual(files.relatedContext(request(invoiceQuery)).snippets, []);
  const added = "\nconst x = invoiceHelper(invoiceInput, invoiceOptions);";
  files.edit(uri("src/palette.ts"), [changeAt(palette, palette.length, 0, added)]);
  assert.deepEqual(
    files.relatedContext(request(invoiceQuery)).snippets.map((s) => s.path),
    ["src/palette.ts"],
  );
  files.edit(uri("src/palette.ts"), [changeAt(palette + added, palette.length, added.length, "")]);
  const windows = (context: ReturnType<RecentFiles["relatedContext"]>) =>
    context.snippets.filter((s) => s.kind === "window");
  assert.deepEqual(
    windows(files.relatedContext(request(invoiceQuery))),
    [],
    "the windows that held the names are gone",
  );
  files.edit(uri("src/palette.ts"), [changeAt(palette, palette.length, 0, added)]);
  files.setExcludes({ excludeGlobs: ["palette*"] });
  assert.deepEqual(files.relatedContext(request(invoiceQuery)).snippets, []);
});

test("snippets carry their workspace path in the header, and parse back into paths and texts", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/billing/invoice.ts"), topic("invoice"));
  files.open(file("lib/invoice helpers (v2).ts"), topic("invoice").replace(/Step/g, "Phase"));
  const context = files.relatedContext(request(invoiceQuery));
  assert.ok(context.text.startsWith(snippetHeader(context.snippets[0]?.path ?? "")));
  const parsed = parseSnippets(context.text);
  assert.deepEqual(parsed.map((s) => s.path).sort(), ["lib/invoice helpers (v2).ts", "src/billing/invoice.ts"]);
  assert.equal(parsed.find((s) => s.path === "src/billing/invoice.ts")?.text, topic("invoice"));
});

test("sent least similar first, so the best snippet sits next to the cursor's own code", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/invoice.ts"), topic("invoice"));
  files.open(file("src/mixed.ts"), `${topic("palette", 6)}\nconst x = invoiceHelper(invoiceInput);`);
  const context = files.relatedContext(request(invoiceQuery));
  assert.deepEqual(
    context.snippets.map((s) => s.path),
    ["src/mixed.ts", "src/invoice.ts"],
  );
  const scores = context.snippets.map((s) => s.score);
  assert.deepEqual(
    scores,
    [...scores].sort((a, b) => a - b),
  );
});

test("the budget is never exceeded, header lines and escapes included", () => {
  const files = new RecentFiles(new FakeClock());
  const names = ["invoice", "order", "customer", "payment", "refund", "ledger"];
  for (const [i, name] of names.entries()) {
    // A line that reads like a snippet header is escaped with one more character when sent.
    const tricky = i % 2 === 0 ? `\n--- file: fake/${name}.ts ---` : "";
    files.open(file(`src/${name}.ts`), `${topic(name, 30 + i * 7)}${tricky}\n${topic("invoice", 3)}`);
  }
  const query = `${invoiceQuery}\norderHelper(customerInput); paymentStep1(refundOptions);`;
  for (let budget = 0; budget <= 12_000; budget += 97) {
    const context = files.relatedContext(request(query, { budget }));
    assert.ok(context.text.length <= budget, `${context.text.length} chars in a budget of ${budget}`);
  }
  assert.equal(files.relatedContext(request(query, { budget: 0 })).text, "");
});

test("text that reads like snippet headers is escaped, and what the escapes add still fits the budget", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/notes.ts"), `${topic("invoice", 10)}\n${"--- file: elsewhere.ts ---\n".repeat(20)}`);
  const planned = files.relatedContext(request(invoiceQuery)).snippets[0]?.chars ?? 0;
  assert.ok(planned > 0);
  assert.equal(
    parseSnippets(files.relatedContext(request(invoiceQuery)).text).length,
    1,
    "the escaped lines do not split the snippet",
  );
  const exact = files.relatedContext(request(invoiceQuery, { budget: planned }));
  assert.ok(exact.text.length <= planned, `${exact.text.length} > ${planned}`);
});

test("fills greedily by score: a window too big for what is left is passed over for a smaller, less similar one", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/best.ts"), topic("invoice", 8));
  files.open(
    file("src/second.ts"),
    `${topic("invoice", 4)}\n${"// padding padding padding padding padding\n".repeat(30)}`.replace(/Step/g, "Phase"),
  );
  files.open(file("src/third.ts"), `${topic("palette", 3)}\nconst x = invoiceHelper(invoiceInput);`);
  const all = files.relatedContext(request(invoiceQuery));
  assert.deepEqual(
    all.snippets.map((s) => s.path),
    ["src/third.ts", "src/second.ts", "src/best.ts"],
  );
  const [third, second, best] = all.snippets;
  const budget = (best?.chars ?? 0) + (third?.chars ?? 0) + 10;
  assert.ok((second?.chars ?? 0) > 10);
  const tight = files.relatedContext(request(invoiceQuery, { budget }));
  assert.deepEqual(
    tight.snippets.map((s) => s.path),
    ["src/third.ts", "src/best.ts"],
  );
});

test("between equally similar windows, the more recently used file wins", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/a.ts"), topic("invoice"));
  files.open(file("src/b.ts"), topic("invoice").replace(/export /g, "export  "));
  const budget = files.relatedContext(request(invoiceQuery)).snippets[0]?.chars ?? 0;
  assert.deepEqual(
    files.relatedContext(request(invoiceQuery, { budget })).snippets.map((s) => s.path),
    ["src/b.ts"],
  );
  files.touch(uri("src/a.ts"));
  assert.deepEqual(
    files.relatedContext(request(invoiceQuery, { budget })).snippets.map((s) => s.path),
    ["src/a.ts"],
  );
});

test("a near copy of a snippet already picked is left out", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/invoice.ts"), topic("invoice", 30));
  files.open(file("src/invoice.copy.ts"), `${topic("invoice", 30)}\n// copied`);
  files.open(file("src/order.ts"), `${topic("order", 20)}\n${topic("invoice", 2)}`);
  const context = files.relatedContext(request(invoiceQuery, { budget: 32_768 }));
  // The copy's extra comment makes it a little less similar, so the original is the one sent.
  assert.deepEqual(
    context.snippets.map((s) => s.path),
    ["src/order.ts", "src/invoice.ts"],
  );
});

test("one file gives at most two windows, and never two that overlap", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("src/invoice.ts"), topic("invoice", 200));
  const context = files.relatedContext(request(invoiceQuery, { budget: 32_768 }));
  assert.equal(context.snippets.length, MAX_WINDOWS_PER_FILE);
  const [a, b] = context.snippets;
  assert.ok(a && b && (a.end <= b.start || b.end <= a.start), "no two overlap");
});

test("the active file's own lines around the cursor are never sent again; its far parts may be", () => {
  const files = new RecentFiles(new FakeClock());
  const lines = topic("invoice", 120).split("\n");
  files.open(file("src/current.ts"), lines.join("\n"));
  const cursorLine = 100;
  const context = files.relatedContext(
    request(lines.slice(60, 101).join("\n"), { cursorLine, linesBefore: 40, linesAfter: 5 }),
  );
  assert.ok(context.snippets.length > 0);
  for (const s of context.snippets) {
    assert.equal(s.path, "src/current.ts");
    assert.ok(s.end <= cursorLine - 40 || s.start > cursorLine + 5, `[${s.start}, ${s.end}) is next to the cursor`);
  }
});

test("only files of the active document's language family are ranked", () => {
  const files = new RecentFiles(new FakeClock());
  files.open(file("tools/invoice.py"), topic("invoice"));
  files.open(file("web/invoice.vue"), topic("invoice").replace(/Step/g, "Phase"));
  assert.deepEqual(
    files.relatedContext(request(invoiceQuery)).snippets.map((s) => s.path),
    ["web/invoice.vue"],
  );
  assert.deepEqual(
    files
      .relatedContext(request(invoiceQuery, { path: "scripts/run.py", uri: uri("scripts/run.py") }))
      .snippets.map((s) => s.path),
    ["tools/invoice.py"],
  );
});

test("recent edits come first, newest last in the text, with lines around them, even when they share nothing", async () => {
  const clock = new FakeClock();
  const files = new RecentFiles(clock);
  const schema = Array.from({ length: 80 }, (_, i) => `column${i} TEXT,`).join("\n");
  files.open(file("src/schema.ts"), schema);
  files.open(file("src/invoice.ts"), topic("invoice"));
  files.edit(uri("src/schema.ts"), [changeAt(schema, schema.indexOf("column40"), 0, "renamedColumn ")]);
  await clock.advance(1_000);
  files.open(file("src/routes.ts"), topic("route", 50));
  const routes = topic("route", 50);
  files.edit(uri("src/routes.ts"), [changeAt(routes, routes.indexOf("routeStep30"), 0, "newRoute(); ")]);
  const context = files.relatedContext(request(invoiceQuery));
  const kinds = context.snippets.map((s) => `${s.kind} ${s.path}`);
  assert.deepEqual(kinds.slice(-2), ["edit src/schema.ts", "edit src/routes.ts"]);
  assert.ok(kinds.includes("window src/invoice.ts"));
  const schemaEdit = parseSnippets(context.text).find((s) => s.path === "src/schema.ts")?.text ?? "";
  assert.equal(
    schemaEdit,
    [
      "column37 TEXT,",
      "column38 TEXT,",
      "column39 TEXT,",
      "renamedColumn column40 TEXT,",
      "column41 TEXT,",
      "column42 TEXT,",
      "column43 TEXT,",
    ].join("\n"),
  );
});

test("an edit is found on its lines after lines are added above it, and is forgotten after a few minutes", async () => {
  const clock = new FakeClock();
  const files = new RecentFiles(clock);
  const schema = Array.from({ length: 80 }, (_, i) => `column${i} TEXT,`).join("\n");
  files.open(file("src/schema.ts"), schema);
  files.edit(uri("src/schema.ts"), [changeAt(schema, schema.indexOf("column60"), 0, "edited ")]);
  const now = files.heldText(uri("src/schema.ts")) ?? "";
  files.setText(uri("src/schema.ts"), `// header\n// added\n${now}`);
  const sent = () => parseSnippets(files.relatedContext(request(invoiceQuery)).text).map((s) => s.text);
  assert.match(sent()[0] ?? "", /^column57 TEXT,\n(?:.*\n){2}edited column60 TEXT,/);
  await clock.advance(EDIT_MAX_AGE_MS + 1);
  assert.deepEqual(sent(), []);
});

test("an edit next to the cursor is already in the request and is not sent again", () => {
  const files = new RecentFiles(new FakeClock());
  const text = topic("invoice", 100);
  files.open(file("src/current.ts"), text);
  files.edit(uri("src/current.ts"), [changeAt(text, text.indexOf("invoiceStep90"), 0, "x")]);
  const near = files.relatedContext(request(invoiceQuery, { cursorLine: 92, linesBefore: 40, linesAfter: 2 }));
  assert.equal(
    near.snippets.some((s) => s.kind === "edit"),
    false,
  );
  const far = files.relatedContext(request(invoiceQuery, { cursorLine: 30, linesBefore: 20, linesAfter: 2 }));
  assert.equal(
    far.snippets.some((s) => s.kind === "edit"),
    true,
  );
});

test("edits take at most half the budget, so ranked windows keep room", () => {
  const files = new RecentFiles(new FakeClock());
  for (const name of ["one", "two", "three"]) {
    const text = topic(name, 30);
    files.open(file(`src/${name}.ts`), text);
    files.edit(uri(`src/${name}.ts`), [changeAt(text, text.indexOf(`${name}Step15`), 0, "x")]);
  }
  files.open(file("src/invoice.ts"), topic("invoice", 6));
  const context = files.relatedContext(request(invoiceQuery, { budget: 4_000 }));
  const editChars = context.snippets.filter((s) => s.kind === "edit").reduce((sum, s) => sum + s.chars, 0);
  assert.ok(editChars <= 2_000, `${editChars}`);
  assert.ok(context.snippets.some((s) => s.path === "src/invoice.ts"));
});
