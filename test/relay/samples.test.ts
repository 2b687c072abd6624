// Every sample a newcomer is shown answers visible text with the default engine (the local one), run as its docs say:
// the console playground's opening text, docs/api.md's openai SDK snippet with its run command, and
// examples/openai-sdk with the command of its README, whose printed output must be what the README shows.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { emptyAnswerNote, PLAYGROUND_SAMPLE } from "../../relay/console/src/playgroundText";
import { startTestRelay, type TestRelay } from "../support/relayHarness";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The fenced blocks of `lang` in the section under `heading` (up to the next heading of its level or above). */
function blocks(file: string, heading: string, lang: string): string[] {
  const text = `\n${readFileSync(join(ROOT, file), "utf8")}`;
  const start = text.indexOf(`\n${heading}\n`);
  assert.notEqual(start, -1, `${file} has no heading ${heading}`);
  const level = /^#+/.exec(heading)?.[0].length ?? 1;
  const rest = text.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level}} `, "m"));
  const section = end === -1 ? rest : rest.slice(0, end);
  return [...section.matchAll(new RegExp("^```" + lang + "\\n([\\s\\S]*?)^```$", "gm"))].map((m) => m[1] ?? "");
}

/** Runs a shell command line from the docs in `cwd`; resolves with its output once it exits 0. */
function runShell(command: string, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { cwd, env: process.env });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`\`${command}\` exited ${String(code)}:\n${out}\n${err}`));
    });
  });
}

describe("the samples, with the default engine", () => {
  let relay: TestRelay;
  // Where the docs say the snippet is saved, the repository's root: openai and @tab-relay/shared resolve from there.
  let saved: string | undefined;

  before(async () => {
    relay = await startTestRelay({ slug: "default" });
  });
  after(async () => {
    await relay?.close();
    if (saved !== undefined) rmSync(saved, { force: true });
  });

  /** A doc's command line made runnable here: the relay's port, the key. */
  const runnable = (command: string) =>
    command
      .replace(/\s+#.*$/gm, "")
      .replaceAll("http://127.0.0.1:8787", relay.url)
      .replaceAll("svc_ws_...", relay.apiKey);

  test("the console playground's opening text answers visible text at its cursor (the end)", async () => {
    const response = await relay.request("/api/v1/tab/chat/completions", {
      method: "POST",
      json: {
        tab_context: {
          surface: "code",
          workspace_slug: "default",
          entity_id: "console-playground",
          document_type: "plaintext",
          active_text_before_cursor: PLAYGROUND_SAMPLE,
          active_text_after_cursor: "",
          code_language: "javascript",
        },
      },
    });
    assert.equal(response.status, 200);
    const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
    assert.match(body.choices[0]?.message.content ?? "", /\S/, "the sample's answer is empty");
  });

  test("an empty answer from the local engine says why and how to get a real model; another provider's does not guess", () => {
    const note = emptyAnswerNote("local");
    assert.match(note, /only continues what already stands in the document/);
    assert.match(note, /--model/);
    assert.equal(emptyAnswerNote("openai"), "(nothing: the model had no completion here)");
    assert.equal(emptyAnswerNote(undefined), "(nothing: the model had no completion here)");
  });

  test("docs/api.md's openai SDK snippet, saved and run as its run command says, prints the model list and a suggestion", async () => {
    const heading = "### With the `openai` SDK";
    const [snippet] = blocks("docs/api.md", heading, "ts");
    const [command] = blocks("docs/api.md", heading, "sh");
    assert.ok(snippet && command, "the section has a ts snippet and an sh run command");
    const file = /npx tsx (\S+)/.exec(command)?.[1];
    assert.equal(file, "sdk.mts", "the run command runs the file the text names");
    const path = join(ROOT, file);
    assert.ok(!existsSync(path), `${path} exists already; the test will not overwrite it`);
    saved = path;
    writeFileSync(path, runnable(snippet));
    const output = await runShell(runnable(command), ROOT);
    assert.match(output, /\[ 'tab-v1' \]/);
    assert.match(output, /\n {2}return a \+ b;\n\}$/, output);
  });

  test("examples/openai-sdk, run with its README's command, prints what its README shows", async () => {
    const [command] = blocks("examples/openai-sdk/README.md", "# openai SDK example", "sh");
    const [shown] = blocks("examples/openai-sdk/README.md", "# openai SDK example", "text");
    assert.ok(command && shown);
    const output = await runShell(runnable(command), ROOT);
    assert.equal(output, shown);
  });
});
