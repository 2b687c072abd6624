import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { startTestRelay, type TestRelay } from "../support/relayHarness";
import { agentRequest, createAgent, createChannel, postMessage } from "../support/workspace";

/** The webhook echo agent's CLI (`npm run agent:echo`) as a process against a real relay, run again and again. */

const ROOT = new URL("../..", import.meta.url);
/** A tsx start on a busy 2-core machine. */
const START_MS = 20_000;

interface AgentProcess {
  lines: Record<string, unknown>[];
  stderr(): string;
  /** The first stdout line of this kind, once printed; rejects if the process exits first. */
  line(kind: string): Promise<Record<string, unknown>>;
  /** Its exit code, once it has exited. */
  exited: Promise<number | null>;
  child: ChildProcessWithoutNullStreams;
}

/** `viaNpm`: as the docs start it, `npm run agent:echo -- ARGS` (npm's own lines kept off stdout by --silent). */
function runAgent(args: string[], env: Record<string, string>, viaNpm = false): AgentProcess {
  const [command, commandArgs] = viaNpm
    ? ["npm", ["run", "--silent", "agent:echo", "--", ...args]]
    : [process.execPath, ["--import", "tsx", "examples/echo-agent/agent.ts", ...args]];
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  const lines: Record<string, unknown>[] = [];
  const changed = new EventEmitter();
  let stderr = "";
  let buffered = "";
  let done = false;
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  child.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const complete = buffered.split("\n");
    buffered = complete.pop() ?? "";
    for (const text of complete) if (text.trim() !== "") lines.push(JSON.parse(text) as Record<string, unknown>);
    changed.emit("change");
  });
  const exited = once(child, "exit").then(([code]) => {
    done = true;
    changed.emit("change");
    return code as number | null;
  });
  async function line(kind: string): Promise<Record<string, unknown>> {
    const deadline = AbortSignal.timeout(START_MS);
    for (;;) {
      const found = lines.find((entry) => entry.kind === kind);
      if (found !== undefined) return found;
      if (done) throw new Error(`the agent exited before printing ${kind}: ${stderr}`);
      await once(changed, "change", { signal: deadline }).catch(() => {
        throw new Error(`timed out waiting for the agent's ${kind} line (stderr: ${stderr})`);
      });
    }
  }
  return { lines, stderr: () => stderr, line, exited, child };
}

/** The pids whose parent is `pid`, read from /proc (Linux). */
function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // It ended while we looked.
    }
    // Fields after the command name, which is in parentheses and may hold spaces: state, then the parent's pid.
    const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (parent === pid) children.push(Number(entry));
  }
  return children;
}

function commandLine(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
}

async function stop(agent: AgentProcess): Promise<void> {
  agent.child.kill("SIGTERM");
  assert.equal(await agent.exited, 0, agent.stderr());
}

describe("the echo agent's CLI against a relay", () => {
  let relay: TestRelay;
  let folder: string;
  let env: Record<string, string>;

  before(async () => {
    relay = await startTestRelay({ env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" } });
    folder = mkdtempSync(join(tmpdir(), "echo-agent-cli-"));
    env = { TAB_RELAY_API_KEY: relay.apiKey };
  });
  after(async () => {
    await relay.close();
    rmSync(folder, { recursive: true, force: true });
  });

  async function agentNamed(name: string): Promise<Array<{ id: string; name: string; webhook_url: string | null }>> {
    const response = await relay.request("/api/v1/agents");
    const agents = (
      (await response.json()) as { data: Array<{ id: string; name: string; webhook_url: string | null }> }
    ).data;
    return agents.filter((agent) => agent.name === name);
  }

  /** Mentions the agent in a channel of its own and resolves with its reply in the thread. */
  async function answers(name: string, agentId: string, text: string): Promise<string> {
    const channel = await createChannel(relay, `talk-${name.toLowerCase()}-${Math.random().toString(36).slice(2, 8)}`);
    const posted = await postMessage(relay, channel, `@${name} ${text}`);
    const reply = await relay.whenHeard(
      async () => {
        const response = await relay.request(
          `/api/v1/conversations/channel/${channel.id}/messages?thread_id=${posted.id}`,
        );
        const messages = ((await response.json()) as { data: Array<{ text: string; author: { id: string } }> }).data;
        return messages.find((message) => message.author.id === agentId);
      },
      `${name}'s reply`,
      START_MS,
    );
    return reply.text;
  }

  test("pointed at a port where no relay listens it names the URL and the cause, without the usage text", async () => {
    // A port that was free a moment ago: nothing listens there now.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const wrong = `http://127.0.0.1:${port}`;
    const agent = runAgent(["--relay", wrong, "--port", "0", "--credentials", join(folder, "nowhere.json")], env);
    assert.equal(await agent.exited, 1);
    const stderr = agent.stderr();
    assert.ok(stderr.includes(wrong), stderr);
    assert.match(stderr, /ECONNREFUSED/);
    assert.doesNotMatch(stderr, /Usage:/);
  });

  test("with its port taken it stops naming the port and --port, and registers nothing", async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const { port } = squatter.address() as AddressInfo;
    try {
      const agent = runAgent(
        [
          "--relay",
          relay.url,
          "--name",
          "Squeezed",
          "--port",
          String(port),
          "--credentials",
          join(folder, "squeezed.json"),
        ],
        env,
      );
      assert.equal(await agent.exited, 1);
      assert.match(agent.stderr(), new RegExp(`Port ${port} on 127\\.0\\.0\\.1 is already in use.*--port N`));
      assert.deepEqual(await agentNamed("Squeezed"), []);
      assert.equal(existsSync(join(folder, "squeezed.json")), false);
    } finally {
      squatter.close();
    }
  });

  test("saves its token and signing secret in a 0600 file and runs again as the same agent, with or without the API key", async () => {
    const credentials = join(folder, "nested", "echo.json");
    const first = runAgent(["--relay", relay.url, "--port", "0", "--credentials", credentials], env);
    const created = await first.line("created");
    const listening = await first.line("listening");
    // It asked the relay for a test event and saw it delivered.
    assert.equal((await first.line("reachable")).url, `${listening.url as string}/`);
    const agentId = created.agent as string;
    assert.equal(created.webhook_url, `${listening.url as string}/`);
    assert.equal(statSync(credentials).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(credentials, "utf8")) as {
      agents: Array<{ relay: string; name: string; agent_id: string; token: string; signing_secret: string }>;
    };
    assert.deepEqual(
      saved.agents.map(({ relay: where, name, agent_id }) => ({ where, name, agent_id })),
      [{ where: relay.url, name: "Echo", agent_id: agentId }],
    );
    assert.equal((await agentRequest(relay, saved.agents[0]?.token ?? "", "/me")).status, 200);
    for (const entry of first.lines) assert.doesNotMatch(JSON.stringify(entry), /svc_agent_|whsec_/);
    assert.equal(await answers("Echo", agentId, "first run"), "Echo: first run");
    await stop(first);

    // Same port: nothing on the relay changes, so no API key is needed.
    const port = new URL(listening.url as string).port;
    const second = runAgent(["--relay", relay.url, "--port", port, "--credentials", credentials], {});
    assert.deepEqual((await second.line("reused")).agent, agentId);
    await second.line("listening");
    assert.match(String((await second.line("reachability_unchecked")).reason), /no API key in TAB_RELAY_API_KEY/);
    assert.equal(await answers("Echo", agentId, "second run"), "Echo: second run");
    await stop(second);

    // Another port: the saved agent is pointed at it with the API key.
    const third = runAgent(["--relay", relay.url, "--port", "0", "--credentials", credentials], env);
    const moved = await third.line("reused");
    const url = (await third.line("listening")).url as string;
    assert.deepEqual([moved.agent, moved.webhook_url], [agentId, `${url}/`]);
    assert.deepEqual(
      (await agentNamed("Echo")).map((agent) => [agent.id, agent.webhook_url]),
      [[agentId, `${url}/`]],
    );
    assert.equal(await answers("Echo", agentId, "third run"), "Echo: third run");
    await stop(third);
  });

  // tsx's own CLI runs a script in a child and, on SIGTERM, gives that child 30 ms to say it got the signal before it
  // SIGKILLs it and exits 128 + 15 (relaySignalToChild in tsx 4's dist/cli.mjs). On a busy machine the agent was
  // killed that way before it could close: the README walkthrough's agent exited 143 in a CI run.
  test(
    "`npm run agent:echo` runs the agent as npm's only child, so npm's SIGTERM reaches it and it stops cleanly, exit 0",
    {
      skip: process.platform !== "linux" && "reads /proc",
    },
    async () => {
      const agent = runAgent(
        ["--relay", relay.url, "--name", "Npm", "--port", "0", "--credentials", join(folder, "npm.json")],
        env,
        true,
      );
      await agent.line("listening");
      const children = childPids(agent.child.pid as number);
      assert.equal(children.length, 1, `npm's children: ${children.map(commandLine).join(" | ")}`);
      const [only] = children as [number];
      assert.match(commandLine(only), /examples\/echo-agent\/agent\.ts/);
      assert.doesNotMatch(commandLine(only), /\.bin\/tsx|tsx\/dist\/cli/, "tsx's CLI stands between npm and the agent");
      assert.deepEqual(childPids(only).map(commandLine), [], "the agent runs in npm's child itself");
      await stop(agent);
    },
  );

  test("a saved agent the relay no longer knows is forgotten and a new one created", async () => {
    const file = join(folder, "gone.json");
    const first = runAgent(["--relay", relay.url, "--name", "Gone", "--port", "0", "--credentials", file], env);
    const old = (await first.line("created")).agent as string;
    await first.line("listening");
    await stop(first);
    assert.equal((await relay.request(`/api/v1/agents/${old}`, { method: "DELETE" })).status, 200);

    const second = runAgent(["--relay", relay.url, "--name", "Gone", "--port", "0", "--credentials", file], env);
    assert.equal((await second.line("saved_agent_refused")).agent, old);
    const fresh = (await second.line("created")).agent as string;
    assert.notEqual(fresh, old);
    await second.line("listening");
    await stop(second);
  });

  test("an agent of that name it holds no secrets for is refused with the way out, and --take-over replaces its token and secret", async () => {
    const existing = await createAgent(relay, { name: "Taken", webhook_url: "http://127.0.0.1:9/" });
    const file = join(folder, "taken.json");

    const refused = runAgent(["--relay", relay.url, "--name", "Taken", "--port", "0", "--credentials", file], env);
    assert.equal(await refused.exited, 1);
    assert.match(refused.stderr(), /An agent named Taken exists .*--take-over/);
    assert.equal((await agentRequest(relay, existing.token, "/me")).status, 200);

    const taking = runAgent(
      ["--relay", relay.url, "--name", "Taken", "--port", "0", "--credentials", file, "--take-over"],
      env,
    );
    const taken = await taking.line("taken_over");
    const url = (await taking.line("listening")).url as string;
    assert.deepEqual([taken.agent, taken.webhook_url], [existing.agent.id, `${url}/`]);
    assert.equal((await agentRequest(relay, existing.token, "/me")).status, 401, "the old token stops working");
    assert.equal(await answers("Taken", existing.agent.id, "yours now"), "Echo: yours now");
    await stop(taking);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  test("after a restart that refuses its private address, it says at start that the relay cannot deliver to it, naming the setting", async () => {
    // Its own relay: this one restarts without TAB_RELAY_WEBHOOK_ALLOW_PRIVATE, on the same port and data folder.
    const allowing = await startTestRelay({ env: { TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "true" } });
    let strict: TestRelay | undefined;
    const file = join(folder, "restarted.json");
    try {
      const relayUrl = allowing.url;
      const first = runAgent(["--relay", relayUrl, "--name", "Restarted", "--port", "0", "--credentials", file], {
        TAB_RELAY_API_KEY: allowing.apiKey,
      });
      const url = (await first.line("listening")).url as string;
      await first.line("reachable");
      await stop(first);
      await allowing.relay.close(0);

      strict = await startTestRelay({
        reuse: allowing,
        env: { TAB_RELAY_PORT: new URL(relayUrl).port, TAB_RELAY_WEBHOOK_ALLOW_PRIVATE: "false" },
      });
      assert.equal(strict.url, relayUrl);
      const again = runAgent(
        ["--relay", relayUrl, "--name", "Restarted", "--port", new URL(url).port, "--credentials", file],
        { TAB_RELAY_API_KEY: strict.apiKey },
      );
      await again.line("reused");
      const unreachable = await again.line("unreachable");
      assert.equal(unreachable.url, `${url}/`);
      assert.match(String(unreachable.error), /TAB_RELAY_WEBHOOK_ALLOW_PRIVATE/);
      // The warning goes to stderr, just after the line on stdout.
      const warning = new RegExp(`cannot deliver to this agent at ${url}/: .*TAB_RELAY_WEBHOOK_ALLOW_PRIVATE`);
      for (const deadline = Date.now() + START_MS; !warning.test(again.stderr()) && Date.now() < deadline;)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.match(again.stderr(), warning);
      await stop(again);
    } finally {
      if (strict !== undefined) await strict.close();
      else await allowing.close();
    }
  });
});
