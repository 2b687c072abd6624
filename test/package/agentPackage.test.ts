import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Api } from "@tab-relay/shared";
import {
  type Packed,
  REPO_ROOT,
  npm,
  outsideEnv,
  pack,
  registryProblem,
  scratchFolder,
  secondsSince,
} from "../support/packages";
import { runCommand, until } from "../support/relayProcess";
import { type TestRelay, startTestRelay } from "../support/relayHarness";

/**
 * @tab-relay/agent as an agent developer gets it: `npm pack` of agent/, installed into a new project outside the
 * repository beside `ws` and TypeScript from the npm registry. There the README's two agents, copied from
 * agent/README.md as they are written, answer a mention in a channel of a real relay: over webhooks, then over
 * Socket Mode. The package loads as CommonJS too, and `tsc` checks a strict TypeScript agent against its types,
 * once as an ES module and once as CommonJS.
 */

const MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, "agent/package.json"), "utf8")) as { version: string };
/** The same versions the repository uses, so npm's cache has them. */
const ROOT_MANIFEST = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>;
};
const WS_VERSION = (
  JSON.parse(readFileSync(join(REPO_ROOT, "relay/package.json"), "utf8")) as { dependencies: Record<string, string> }
).dependencies["ws"];
/** What the package exports at run time: anything beyond this list is a private name leaking out. */
const RUNTIME_EXPORTS = [
  "AGENT_API_PATH",
  "AGENT_SOCKET_PATH",
  "AgentApiError",
  "DEFAULT_MAX_RETRIES",
  "DEFAULT_MAX_RETRY_AFTER_MS",
  "DEFAULT_MAX_WEBHOOK_BODY_BYTES",
  "DEFAULT_REMEMBERED_WEBHOOK_IDS",
  "DEFAULT_WEBHOOK_TOLERANCE_SECONDS",
  "SOCKET_MODE_CLOSE_CODES",
  "SocketModeError",
  "WEBHOOK_HEADERS",
  "WebhookVerificationError",
  "agentSocketUrl",
  "createAgentClient",
  "createSocketModeClient",
  "createWebhookHandler",
  "createWebhookReceiver",
  "isValidSigningSecret",
  "replyTo",
  "signWebhook",
  "verifyWebhook",
];

/** The `js` block after `<!-- agent-readme: NAME -->` in agent/README.md. */
function readmeAgent(name: string): string {
  const text = readFileSync(join(REPO_ROOT, "agent/README.md"), "utf8");
  const match = new RegExp(`<!-- agent-readme: ${name} -->\\s*\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(text);
  assert.ok(match?.[1], `agent/README.md has a js block marked agent-readme: ${name}`);
  return match[1];
}

/** A strict TypeScript agent, for tsc: wrong uses are marked, so types that were `any` would fail the check too. */
const TYPED_AGENT = `import {
  AgentApiError,
  type AgentApiMessage,
  type WebhookEvent,
  createAgentClient,
  createWebhookHandler,
  verifyWebhook,
} from "@tab-relay/agent";

const client = createAgentClient({ url: "http://127.0.0.1:8787", token: "svc_agent_x" });
export const handler = createWebhookHandler({
  signingSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  async onEvent(event: WebhookEvent) {
    if (event.type !== "message.created") return;
    const text: string = event.message.text;
    const threadId: string | null = event.reply.thread_id;
    try {
      const posted: AgentApiMessage = await client.reply(event, text);
      const author: "user" | "agent" = posted.author.type;
      void [threadId, author];
    } catch (error) {
      if (error instanceof AgentApiError) {
        const seconds: number | undefined = error.retryAfterSeconds;
        void [error.status, error.code, seconds];
      }
    }
  },
});
export const verified: Promise<unknown> = verifyWebhook("whsec_x", { "webhook-id": "a" }, "{}");
const ping: Extract<WebhookEvent, { type: "ping" }> = {
  id: "evt_1",
  type: "ping",
  created_at: "2026-01-01T00:00:00.000Z",
  workspace: { slug: "acme", name: "Acme" },
  agent: { id: "agt_1", name: "Echo" },
};
// @ts-expect-error a ping has no message
void ping.message;
// @ts-expect-error reply needs the event and the text
void client.reply("text");
const messages: Promise<AgentApiMessage[]> = client.messages({ type: "channel", id: "ch_1" }, { limit: 10 });
void messages;
`;

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const problem = await registryProblem();
const skip = problem && !process.env["CI"] ? `SKIPPED, NOT TESTED: ${problem}` : false;
if (skip) console.error(`\n${"!".repeat(100)}\n[agent-package] ${skip}\n${"!".repeat(100)}\n`);

describe("@tab-relay/agent, installed into a project outside the repository", { skip }, () => {
  const children = new Set<ChildProcess>();
  let project: string;
  let packed: Packed;
  let relay: TestRelay;
  let channel: string;
  const figures: string[] = [];

  before(async () => {
    project = scratchFolder("tab-relay-agent-project-");
    let started = performance.now();
    packed = await pack("agent", project);
    figures.push(
      `npm pack: ${secondsSince(started)} s, ${packed.file.split("/").at(-1)} ${(packed.size / 1024).toFixed(1)} KiB (${(packed.unpackedSize / 1024).toFixed(1)} KiB unpacked)`,
    );
    writeFileSync(
      join(project, "package.json"),
      `${JSON.stringify({ name: "my-agent", private: true, type: "module" }, null, 2)}\n`,
    );
    started = performance.now();
    const installed = await npm(
      [
        "install",
        "--no-package-lock",
        packed.file,
        `ws@${WS_VERSION}`,
        `typescript@${ROOT_MANIFEST.devDependencies["typescript"]}`,
        `@types/node@${ROOT_MANIFEST.devDependencies["@types/node"]}`,
        "@types/ws@8.18.2",
      ],
      project,
    );
    assert.equal(installed.status, 0, `${installed.stdout}\n${installed.stderr}`);
    figures.push(`npm install (the package, ws, typescript, @types/node, @types/ws): ${secondsSince(started)} s`);

    relay = await startTestRelay({ env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" } });
    const created = await relay.request("/api/v1/channels", { method: "POST", json: { name: "agents" } });
    assert.equal(created.status, 201);
    channel = ((await created.json()) as { data: Api.Conversation }).data.id;
  });
  after(async () => {
    for (const child of children) child.kill("SIGKILL");
    await relay?.close();
    if (figures.length > 0) console.log(`[agent-package] ${figures.join("; ")}`);
    if (project) rmSync(project, { recursive: true, force: true });
  });

  /** A new agent on the relay, in the channel; with a webhook URL, or none for Socket Mode. */
  async function connectAgent(name: string, webhookUrl?: string): Promise<Api.AgentCreated> {
    const response = await relay.request("/api/v1/agents", {
      method: "POST",
      json: { name, ...(webhookUrl ? { webhook_url: webhookUrl } : {}) },
    });
    assert.equal(response.status, 201, await response.clone().text());
    const created = ((await response.json()) as { data: Api.AgentCreated }).data;
    const joined = await relay.request(`/api/v1/channels/${channel}/members`, {
      method: "POST",
      json: { agent_id: created.agent.id },
    });
    assert.equal(joined.status, 201);
    return created;
  }

  /** Runs `file` of the project with node, as its developer would, until the test ends. */
  function runAgent(file: string, env: Record<string, string>): { output(): string } {
    const child = spawn(process.execPath, [file], { cwd: project, env: outsideEnv(env), stdio: "pipe" });
    children.add(child);
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    return { output: () => output };
  }

  /** Mentions the agent in the channel and waits for its answer in the thread under the mention. */
  async function mentionAndWaitForReply(name: string, text: string): Promise<Api.Message> {
    const posted = await relay.request(`/api/v1/conversations/channel/${channel}/messages`, {
      method: "POST",
      json: { text: `@${name} ${text}` },
    });
    assert.equal(posted.status, 201);
    const mention = ((await posted.json()) as { data: Api.Message }).data;
    return until(
      `${name}'s reply`,
      30_000,
      async () => {
        const thread = await relay.request(`/api/v1/conversations/channel/${channel}/messages?thread_id=${mention.id}`);
        const messages = ((await thread.json()) as { data: Api.Message[] }).data;
        return messages.find((message) => message.author.type === "agent");
      },
      100,
    );
  }

  test("the tarball holds the ES module, the CommonJS build, their types and the README, and depends on nothing", () => {
    assert.equal(packed.name, "@tab-relay/agent");
    assert.equal(packed.version, MANIFEST.version);
    assert.deepEqual([...packed.files].sort(), [
      "README.md",
      "dist/LICENSE",
      "dist/index.cjs",
      "dist/index.d.cts",
      "dist/index.d.ts",
      "dist/index.js",
      "package.json",
    ]);
    const manifest = JSON.parse(
      readFileSync(join(project, "node_modules/@tab-relay/agent/package.json"), "utf8"),
    ) as Record<string, unknown>;
    assert.equal(manifest["dependencies"], undefined);
    assert.equal(manifest["peerDependencies"], undefined);
    const types = readFileSync(join(project, "node_modules/@tab-relay/agent/dist/index.d.ts"), "utf8");
    assert.doesNotMatch(types, /@tab-relay\/shared|from "zod"|import\(/, "the types stand alone");
  });

  test("it exports the same public names as an ES module and as CommonJS, and nothing private", async () => {
    const script = `
      const esm = Object.keys(await import("@tab-relay/agent")).sort();
      const { createRequire } = await import("node:module");
      const cjs = Object.keys(createRequire(import.meta.url)("@tab-relay/agent")).sort();
      console.log(JSON.stringify({ esm, cjs }));`;
    const run = await runCommand(process.execPath, ["--input-type=module", "-e", script], {
      cwd: project,
      env: outsideEnv(),
      killAfterMs: 30_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const { esm, cjs } = JSON.parse(run.stdout) as { esm: string[]; cjs: string[] };
    assert.deepEqual(esm, RUNTIME_EXPORTS);
    assert.deepEqual(cjs, RUNTIME_EXPORTS);
  });

  test("the README's ten-line agent answers a mention over webhooks", async () => {
    writeFileSync(join(project, "webhook-agent.mjs"), readmeAgent("webhook"));
    const lines = readmeAgent("webhook").trim().split("\n").length;
    assert.ok(lines <= 12, `the ten-line agent has ${lines} lines`);
    const port = await freePort();
    const created = await connectAgent("Hooky", `http://127.0.0.1:${port}/`);
    const agent = runAgent("webhook-agent.mjs", {
      AGENT_TOKEN: created.token,
      AGENT_SIGNING_SECRET: created.signing_secret,
      PORT: String(port),
    });
    const reply = await mentionAndWaitForReply("Hooky", "are you there?").catch((error: unknown) => {
      throw new Error(`${String(error)}\nthe agent printed:\n${agent.output()}`);
    });
    assert.equal(reply.text, "You said: @Hooky are you there?");
    assert.equal(reply.author.name, "Hooky");
  });

  test("the README's Socket Mode agent answers a mention with no webhook URL", async () => {
    writeFileSync(join(project, "socket-agent.mjs"), readmeAgent("socket"));
    const created = await connectAgent("Socky");
    const agent = runAgent("socket-agent.mjs", {
      AGENT_TOKEN: created.token,
      AGENT_SIGNING_SECRET: created.signing_secret,
      RELAY_URL: relay.url,
    });
    await until(
      "the agent's socket",
      30_000,
      async () => {
        const answer = await relay.request(`/api/v1/agents/${created.agent.id}`);
        const agentNow = ((await answer.json()) as { data: Api.Agent }).data;
        return agentNow.can_manage && agentNow.connection.socket === "connected" ? true : undefined;
      },
      100,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nthe agent printed:\n${agent.output()}`);
    });
    const reply = await mentionAndWaitForReply("Socky", "over the socket?");
    assert.equal(reply.text, "You said: @Socky over the socket?");
  });

  test("tsc checks a strict agent against the package's types, as an ES module and as CommonJS", async () => {
    writeFileSync(join(project, "typed-agent.mts"), TYPED_AGENT);
    writeFileSync(join(project, "typed-agent.cts"), TYPED_AGENT);
    writeFileSync(
      join(project, "tsconfig.json"),
      `${JSON.stringify(
        {
          compilerOptions: {
            strict: true,
            exactOptionalPropertyTypes: true,
            noUncheckedIndexedAccess: true,
            module: "nodenext",
            moduleResolution: "nodenext",
            target: "es2022",
            types: ["node"],
            noEmit: true,
            skipLibCheck: false,
          },
          files: ["typed-agent.mts", "typed-agent.cts"],
        },
        null,
        2,
      )}\n`,
    );
    const tsc = await runCommand(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", "."], {
      cwd: project,
      env: outsideEnv(),
      killAfterMs: 120_000,
    });
    assert.equal(tsc.status, 0, `${tsc.stdout}\n${tsc.stderr}`);
  });
});
