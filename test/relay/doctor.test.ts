import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type CommandRun as Run, runCommand } from "../support/relayProcess";
import { startLlamaCppStandIn } from "../support/standIns/llamaCpp";
import { startMistralStandIn } from "../support/standIns/mistral";
import { startOllamaStandIn } from "../support/standIns/ollama";
import type { RecordedRequest, StandIn } from "../support/standIns/server";
import { startTgiStandIn } from "../support/standIns/tgi";
import { startVllmStandIn } from "../support/standIns/vllm";

/**
 * `tab-relay doctor` as an operator runs it: the built CLI in its own process, against the strict stand-in of each
 * model server over real HTTP. Each test checks what doctor recommends, the environment lines it prints, its exit
 * code, and what the server actually received. Needs a fresh `npm run build -w relay`.
 */

const BIN = fileURLToPath(new URL("../../relay/bin/tab-relay.js", import.meta.url));
const cleanEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));
const REPLY = "return a + b;";
const BEFORE = "function add(a, b) {\n  ";
const AFTER = "\n}\n";

/** Runs doctor asynchronously: the stand-ins live in this process and must go on answering while it runs. */
function doctor(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return runCommand(process.execPath, [BIN, "doctor", ...args], { env: { ...cleanEnv, ...env }, killAfterMs: 30_000 });
}

/** The lines doctor prints for `tab-relay serve`, after "Start the relay with:" (or the failed settings). */
function envLinesOf(stdout: string): string[] {
  return stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => /^TAB_RELAY_[A-Z_]+=/.test(line));
}

/** The upstream check in doctor's JSON report, as far as these tests read it. */
interface UpstreamJson {
  name: string;
  status: string;
  server: unknown;
  model: unknown;
  recommendation: { api: string };
  env: string[];
  completion: { ok: boolean; text: string; first_fragment_ms: number | null };
  probes: { method: string; url: string; status: number | null }[];
}

const routes = (standIn: StandIn) =>
  standIn.requests.map((request: RecordedRequest) => `${request.method} ${request.path}`);

describe("tab-relay doctor", () => {
  const closers: (() => Promise<unknown>)[] = [];
  after(() => Promise.all(closers.map((close) => close())));
  async function started<T extends { close(): Promise<unknown> }>(standIn: Promise<T>): Promise<T> {
    const value = await standIn;
    closers.push(() => value.close());
    return value;
  }

  test("vLLM with a Qwen coder model: fim with qwen-coder, /v1 added to the root URL, one FIM prompt without suffix", async () => {
    const vllm = await started(startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B", reply: REPLY }));
    const run = await doctor(["--upstream-url", vllm.origin]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.deepEqual(envLinesOf(run.stdout), [
      `TAB_RELAY_UPSTREAM_URL=${vllm.origin}/v1`,
      "TAB_RELAY_UPSTREAM_MODEL=Qwen/Qwen2.5-Coder-7B",
      "TAB_RELAY_UPSTREAM_API=fim",
      "TAB_RELAY_FIM_TEMPLATE=qwen-coder",
    ]);
    assert.match(
      run.stdout,
      new RegExp(
        `^  GET  ${vllm.origin}/v1/models → 200 in \\d+ ms: 1 model: Qwen/Qwen2.5-Coder-7B \\(owned_by "vllm" in its model list\\)$`,
        "m",
      ),
    );
    assert.match(run.stdout, /^Server {6}vLLM, known by owned_by "vllm" in its model list$/m);
    assert.match(run.stdout, new RegExp(`^Base URL {4}${vllm.origin}/v1 \\(the URL given plus /v1\\)$`, "m"));
    assert.match(run.stdout, /^ {12}"return a \+ b;": first fragment after \d+ ms, done after \d+ ms$/m);
    assert.match(run.stdout, /The round trip works/);
    assert.deepEqual(routes(vllm), ["GET /v1/models", "POST /v1/completions"]);
    const body = vllm.requests[1]?.body as Record<string, unknown>;
    assert.equal(body["prompt"], `<|fim_prefix|>${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`);
    assert.equal("suffix" in body, false);
    assert.deepEqual([body["model"], body["max_tokens"], body["stream"]], ["Qwen/Qwen2.5-Coder-7B", 16, true]);
  });

  test("a mode given that the server refuses fails with the server's error, the relay's hint and doctor's recommendation", async () => {
    const vllm = await started(startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B", reply: REPLY }));
    const run = await doctor(["--upstream-url", `${vllm.origin}/v1`], { TAB_RELAY_UPSTREAM_API: "suffix" });
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /failed after \d+ ms: Upstream answered 400: suffix is not currently supported\. Hint: this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim$/m,
    );
    assert.match(
      run.stdout,
      /^To do: TAB_RELAY_UPSTREAM_API=suffix was given; for this server doctor recommends fim /m,
    );
    assert.deepEqual(envLinesOf(run.stdout).slice(2), ["TAB_RELAY_UPSTREAM_API=suffix"]);
  });

  test("llama.cpp whose model has FIM tokens: infill on the server root", async () => {
    const llama = await started(startLlamaCppStandIn({ reply: REPLY }));
    const run = await doctor(["--upstream-url", `${llama.origin}/v1`]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.deepEqual(envLinesOf(run.stdout), [
      `TAB_RELAY_UPSTREAM_URL=${llama.origin}`,
      `TAB_RELAY_UPSTREAM_MODEL=${llama.model}`,
      "TAB_RELAY_UPSTREAM_API=infill",
    ]);
    assert.deepEqual(routes(llama), ["GET /v1/models", "GET /props", "GET /health", "POST /infill", "POST /infill"]);
    assert.equal((llama.requests[3]?.body as Record<string, unknown>)["n_predict"], 0);
    const completion = llama.requests[4]?.body as Record<string, unknown>;
    assert.deepEqual(
      [completion["input_prefix"], completion["input_suffix"], completion["n_predict"]],
      [BEFORE, AFTER, 16],
    );
    assert.match(run.stdout, /POST \S+\/infill → 200 in \d+ ms: the model has FIM tokens/);
  });

  test("llama.cpp whose model has no FIM tokens: fim with the template its name picks, on /v1/completions", async () => {
    const llama = await started(startLlamaCppStandIn({ fim: false, reply: REPLY }));
    const run = await doctor(["--upstream-url", llama.origin]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /POST \S+\/infill → 501 in \d+ ms: the model has no FIM tokens \(Infill is not supported by this model: prefix token is missing/,
    );
    assert.deepEqual(envLinesOf(run.stdout).slice(2), [
      "TAB_RELAY_UPSTREAM_API=fim",
      "TAB_RELAY_FIM_TEMPLATE=qwen-coder",
    ]);
    assert.equal(envLinesOf(run.stdout)[0], `TAB_RELAY_UPSTREAM_URL=${llama.origin}/v1`);
    assert.equal(routes(llama).at(-1), "POST /v1/completions");
  });

  test("Ollama: suffix for a model whose template takes one, and --json prints one object", async () => {
    const ollama = await started(startOllamaStandIn({ reply: REPLY }));
    const run = await doctor(["--upstream-url", ollama.origin, "--json"]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const lines = run.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 1);
    const report = JSON.parse(lines[0] as string) as { ok: boolean; exit_code: number; checks: UpstreamJson[] };
    assert.deepEqual([report.ok, report.exit_code, report.checks.length], [true, 0, 1]);
    const check = report.checks[0] as UpstreamJson;
    assert.deepEqual([check.name, check.status], ["upstream", "ok"]);
    assert.deepEqual(check.server, {
      kind: "ollama",
      name: "Ollama",
      version: "0.12.6",
      evidence: "its GET /api/version",
    });
    assert.deepEqual(check.model, {
      id: "qwen2.5-coder:1.5b",
      why: "the first of the 2 listed; choose another with --upstream-model",
    });
    assert.equal(check.recommendation.api, "suffix");
    assert.deepEqual(check.env, [
      `TAB_RELAY_UPSTREAM_URL=${ollama.origin}/v1`,
      "TAB_RELAY_UPSTREAM_MODEL=qwen2.5-coder:1.5b",
      "TAB_RELAY_UPSTREAM_API=suffix",
    ]);
    assert.equal(check.completion.ok, true);
    assert.equal(check.completion.text, REPLY);
    assert.equal(typeof check.completion.first_fragment_ms, "number");
    assert.deepEqual(
      check.probes.map((probe) => `${probe.method} ${probe.url.slice(ollama.origin.length)} ${probe.status}`),
      ["GET /v1/models 200", "GET /props 404", "GET /api/version 200", "POST /api/show 200"],
    );
    assert.equal(
      ollama.rendered.at(-1),
      `<|fim_prefix|>// Path: add.js\n${BEFORE}<|fim_suffix|>${AFTER}<|fim_middle|>`,
    );
  });

  test("Mistral's API: mistral-fim with the key from the environment, which never appears in the output", async () => {
    const key = "mk-doctor-0123456789";
    const mistral = await started(
      startMistralStandIn({ apiKey: key, models: ["mistral-small-latest", "codestral-2508"], reply: REPLY }),
    );
    const run = await doctor(["--upstream-url", `${mistral.origin}/v1`], { TAB_RELAY_UPSTREAM_API_KEY: key });
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.deepEqual(envLinesOf(run.stdout), [
      `TAB_RELAY_UPSTREAM_URL=${mistral.origin}/v1`,
      "TAB_RELAY_UPSTREAM_MODEL=codestral-2508",
      "TAB_RELAY_UPSTREAM_API=mistral-fim",
    ]);
    assert.match(run.stdout, /codestral-2508 \(the first of the 2 listed that takes FIM/);
    assert.match(run.stdout, /and TAB_RELAY_UPSTREAM_API_KEY, which doctor does not print/);
    assert.ok(!(run.stdout + run.stderr).includes(key));
    assert.ok(mistral.requests.every((request) => request.headers["authorization"] === `Bearer ${key}`));
    assert.equal(routes(mistral).at(-1), "POST /v1/fim/completions");
  });

  test("Mistral's API without the key: refused, and doctor says which variable to set", async () => {
    const mistral = await started(startMistralStandIn({ apiKey: "mk-other" }));
    const run = await doctor(["--upstream-url", `${mistral.origin}/v1`]);
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /\/v1\/models → 401 in \d+ ms: refused: Unauthorized/);
    assert.match(run.stdout, /^To do: the server wants an API key: set TAB_RELAY_UPSTREAM_API_KEY/m);
    assert.deepEqual(envLinesOf(run.stdout), []);
  });

  test("TGI with StarCoder2: fim with starcoder2, also when requests name the model tgi", async () => {
    const tgi = await started(startTgiStandIn({ reply: REPLY }));
    const run = await doctor(["--upstream-url", tgi.origin]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^Server {6}Hugging Face TGI 3\.3\.6, known by its GET \/info$/m);
    assert.deepEqual(envLinesOf(run.stdout).slice(1), [
      "TAB_RELAY_UPSTREAM_MODEL=bigcode/starcoder2-3b",
      "TAB_RELAY_UPSTREAM_API=fim",
      "TAB_RELAY_FIM_TEMPLATE=starcoder2",
    ]);
    assert.deepEqual(routes(tgi), [
      "GET /v1/models",
      "GET /props",
      "GET /api/version",
      "GET /info",
      "POST /v1/completions",
    ]);

    // TGI's examples name the model "tgi": the family still comes from the model TGI serves.
    const named = await doctor(["--upstream-url", tgi.origin, "--upstream-model", "tgi"]);
    assert.equal(named.status, 0, named.stdout + named.stderr);
    assert.match(named.stdout, /^Model {7}tgi \(as given; TGI serves bigcode\/starcoder2-3b under any name\)$/m);
    assert.deepEqual(envLinesOf(named.stdout).slice(1), [
      "TAB_RELAY_UPSTREAM_MODEL=tgi",
      "TAB_RELAY_UPSTREAM_API=fim",
      "TAB_RELAY_FIM_TEMPLATE=starcoder2",
    ]);
  });

  test("TGI with a model no family matches: template advice and no completion; with --fim-template, the round trip", async () => {
    const tgi = await started(startTgiStandIn({ modelId: "bigcode/starcoder", reply: REPLY }));
    const advised = await doctor(["--upstream-url", `${tgi.origin}/v1`]);
    assert.equal(advised.status, 1, advised.stdout + advised.stderr);
    assert.match(
      advised.stdout,
      /^Mode {8}fim with no template: TGI refuses suffix \(422\), so the relay writes the model's FIM prompt, but the name matches no template family$/m,
    );
    assert.match(
      advised.stdout,
      /^To do: set TAB_RELAY_FIM_TEMPLATE to the model's family, one of qwen-coder, starcoder2, codellama, deepseek-coder, codestral, codegemma, or to a custom template/m,
    );
    assert.ok(!routes(tgi).includes("POST /v1/completions"));

    const template = "<fim_prefix>{prefix}<fim_suffix>{suffix}<fim_middle>";
    const run = await doctor(["--upstream-url", `${tgi.origin}/v1`, "--fim-template", template]);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    assert.equal(envLinesOf(run.stdout).at(-1), `TAB_RELAY_FIM_TEMPLATE='${template}'`);
    assert.equal(
      (tgi.requests.at(-1)?.body as Record<string, unknown>)["prompt"],
      `<fim_prefix>${BEFORE}<fim_suffix>${AFTER}<fim_middle>`,
    );
  });

  test("a server that refuses everything: each probe shown, the completion refused, the echoed key redacted, exit 1", async () => {
    const key = "sk-refused-0123456789";
    const server: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(403, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `forbidden: ${String(req.headers["authorization"])}` } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const run = await doctor(["--upstream-url", url, "--upstream-model", "house-model"], {
      TAB_RELAY_UPSTREAM_API_KEY: key,
    });
    assert.equal(run.status, 1, run.stdout + run.stderr);
    assert.ok(!(run.stdout + run.stderr).includes(key));
    assert.match(run.stdout, /→ 403 in \d+ ms: refused: forbidden: Bearer \[redacted\]/);
    assert.match(
      run.stdout,
      /^Server {6}not recognised: none of the routes that tell model servers apart answered as one$/m,
    );
    assert.match(run.stdout, /failed after \d+ ms: Upstream answered 403: forbidden: Bearer \[redacted\]/);
    assert.match(run.stdout, /^To do: the server refused the API key: check TAB_RELAY_UPSTREAM_API_KEY$/m);

    const json = await doctor(["--upstream-url", url, "--json"]);
    assert.equal(json.status, 1);
    const check = (JSON.parse(json.stdout) as { checks: { status: string; summary: string; probes: unknown[] }[] })
      .checks[0];
    assert.deepEqual(
      [check?.status, check?.summary, check?.probes.length],
      ["failed", "the server answered, but doctor found no model to try", 4],
    );
  });

  test("nothing listening: exit 2, in text and in JSON", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));

    const run = await doctor(["--upstream-url", `http://127.0.0.1:${port}/v1`]);
    assert.equal(run.status, 2, run.stdout + run.stderr);
    assert.match(run.stdout, /→ no answer after \d+ ms: ECONNREFUSED/);
    assert.match(
      run.stdout,
      new RegExp(`^Nothing answered at http://127\\.0\\.0\\.1:${port}/v1 \\(ECONNREFUSED\\)\\.$`, "m"),
    );
    const json = await doctor(["--upstream-url", `http://127.0.0.1:${port}/v1`, "--json"]);
    assert.equal(json.status, 2);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { ok: boolean; exit_code: number; checks: { status: string }[] }).checks[0]?.status,
      "unreachable",
    );
  });

  test("usage errors exit 2 and say what is wrong", async () => {
    // Alone, doctor checks the folder npm start uses (./data), and says which.
    const cwd = mkdtempSync(join(tmpdir(), "tab-relay-doctor-cwd-"));
    try {
      const none = await runCommand(process.execPath, [BIN, "doctor"], { cwd, env: cleanEnv, killAfterMs: 30_000 });
      assert.equal(none.status, 1, none.stdout);
      assert.equal(
        none.stderr,
        `tab-relay doctor: using the data folder ${join(cwd, "data")} (the one npm start uses; --data DIR for another)\n`,
      );
      assert.match(none.stdout, new RegExp(`^Data folder +failed +no folder at ${join(cwd, "data")}$`, "m"));
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
    const unknown = await doctor(["--upstream-url", "http://127.0.0.1:1", "--workspace", "x"]);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /Unknown option '--workspace'/);
    const mode = await doctor(["--upstream-url", "http://127.0.0.1:1", "--upstream-api", "magic"]);
    assert.equal(mode.status, 2);
    assert.match(mode.stderr, /TAB_RELAY_UPSTREAM_API \(--upstream-api\)/);
    const flag = await doctor(["--upstream-url", "http://127.0.0.1:1", "--upstream-api-key", "sk-on-the-command-line"]);
    assert.match(flag.stderr, /--upstream-api-key puts the upstream API key on the command line/);
    assert.ok(!(flag.stdout + flag.stderr).includes("sk-on-the-command-line"));
  });
});
