import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
// @ts-expect-error: a plain ES module without types, as ESLint plugins are
import heldPromises from "../../scripts/eslint/heldPromises.mjs";

/**
 * The structural guard of issue 19 §1: `tab-relay/no-held-promise` fails the lint wherever a promise is held across an
 * `await` without a handler, as the completion route once held its prompt's token count (whose rejection then ended the
 * process), and lets the guarded and the harmless forms through. Each case is linted with type information, as the
 * repository's lint runs it.
 */

const HEADER = `
type AwaitedLater<T> = Promise<T> & { readonly __awaitedLater: true };
declare function awaitedLater<T>(promise: Promise<T>): AwaitedLater<T>;
declare function countPrompt(text: string): Promise<number>;
declare function generate(): Promise<string>;
`;

let dir: string;
let eslint: ESLint;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "held-promises-"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { strict: true, target: "es2022", lib: ["es2022"], noEmit: true },
      include: ["*.ts"],
    }),
  );
  eslint = new ESLint({
    cwd: dir,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ["**/*.ts"],
        languageOptions: {
          parser: tseslint.parser,
          // Under CI=true typescript-eslint infers a single run and builds the program once, so the case files written
          // later would not be in it ("The file was not found in any of the provided project(s)"); this option turns
          // that inference off (typescript-eslint docs, parserOptions.disallowAutomaticSingleRunInference).
          parserOptions: {
            project: "./tsconfig.json",
            tsconfigRootDir: dir,
            disallowAutomaticSingleRunInference: true,
          },
        },
        plugins: { "tab-relay": heldPromises as ESLint.Plugin },
        rules: { "tab-relay/no-held-promise": "error" },
      },
    ],
  });
});
after(() => rmSync(dir, { recursive: true, force: true }));

let counter = 0;
async function problems(body: string): Promise<string[]> {
  const file = join(dir, `case${counter++}.ts`);
  const code = `${HEADER}\nexport {};\n${body}\n`;
  writeFileSync(file, code);
  const [result] = await eslint.lintFiles([file]);
  assert.ok(result);
  const fatal = result.messages.filter((m) => m.ruleId === null);
  assert.deepEqual(fatal, [], "the case parses");
  return result.messages.map((m) => m.message);
}

describe("tab-relay/no-held-promise", () => {
  test("catches the completion route's old form: the count started, the model awaited, then the count", async () => {
    const found = await problems(`
export async function complete(text: string): Promise<number> {
  const promptTokens = countPrompt(text);
  const completion = await generate();
  return (await promptTokens) + completion.length;
}`);
    assert.equal(found.length, 1, found.join("\n"));
    assert.match(found[0] ?? "", /`promptTokens` is held across this await/);
  });

  test("catches a held promise passed on as a parameter and awaited after other work", async () => {
    const found = await problems(`
export async function stream(promptTokens: Promise<number> | undefined): Promise<number> {
  const completion = await generate();
  return (promptTokens ? await promptTokens : 0) + completion.length;
}`);
    assert.equal(found.length, 1, found.join("\n"));
    assert.match(found[0] ?? "", /`promptTokens`/);
  });

  test("catches a promise held across for await and yield", async () => {
    const found = await problems(`
export async function* pieces(lines: AsyncIterable<string>): AsyncGenerator<string> {
  const count = countPrompt("x");
  for await (const line of lines) yield line;
  yield String(await count);
}`);
    assert.equal(found.length, 1, found.join("\n"));
  });

  test("lets through a promise held through awaitedLater(), also as a parameter", async () => {
    const found = await problems(`
export async function complete(text: string): Promise<number> {
  const promptTokens = awaitedLater(countPrompt(text));
  const completion = await generate();
  return (await finish(promptTokens)) + completion.length;
}
async function finish(promptTokens: AwaitedLater<number> | undefined): Promise<number> {
  await generate();
  return promptTokens ? await promptTokens : 0;
}`);
    assert.deepEqual(found, []);
  });

  test("lets through a promise read before the next await, and those that cannot reject", async () => {
    const found = await problems(`
export async function both(text: string): Promise<number> {
  const a = countPrompt(text);
  const b = countPrompt(text);
  const [x, y] = await Promise.all([a, b]);
  const done = new Promise<void>((resolve) => setTimeout(resolve, 1));
  let chain = Promise.resolve();
  await generate();
  await done;
  await chain;
  return x + y;
}`);
    assert.deepEqual(found, []);
  });
});
