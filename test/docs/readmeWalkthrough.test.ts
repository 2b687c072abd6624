import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import type { MessageCreatedEvent } from "@tab-relay/shared";
import { echoText } from "../../examples/echo-agent/server";
import { codeServerBin } from "../e2e/codeServer";
import { type Step, type Substitutions, readSteps, runnable, serverCommand, walkthroughSteps } from "./walkthrough";

/**
 * The README's quick start and docs/agents.md's echo-agent walkthrough, run as a newcomer pastes them: one bash
 * session in the repository, fed the docs' own `sh` blocks (marked as test/docs/walkthrough.ts describes) against a
 * fresh data folder and a free port. What the test changes: `npm install` and `npm test` are dropped,
 * `127.0.0.1:8787` becomes the free port, `svc_ws_...` the key the first start printed; the environment adds
 * TAB_RELAY_DATA and TAB_RELAY_PORT for `npm start`, PORT=0 and ECHO_AGENT_CREDENTIALS for the agent. The extension's
 * download runs in the test's folder, and `code` is the e2e's code-server (VS Code's server, whose
 * `--install-extension` is VS Code's) with a profile of its own there, or, without code-server, a function that only
 * records its arguments (test/e2e/vsixDownload.e2e.test.ts installs the downloaded file in a real VS Code).
 */

const ROOT = new URL("../../", import.meta.url);
const README_SECTIONS = ["Quick start", "A first completion", "Ghost text in VS Code"];
const AGENT_SECTIONS = ["The echo agent, step by step"];
/** `npm start` builds before it serves; on a busy 2-core machine that takes a while. */
const READY_MS = 60_000;
const DONE = "__walkthrough_done__";

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One bash, as in a terminal; servers run in its background with their output on its stderr, each line tagged. */
class Session {
  readonly child: ChildProcessWithoutNullStreams;
  readonly jobs = new Map<string, string[]>();
  private stdout = "";
  private transcript = "";
  private exited = false;
  private readonly changed = new EventEmitter();
  private blocks = 0;

  constructor(
    private readonly folder: string,
    env: Record<string, string>,
  ) {
    // Its own process group, so the teardown can end whatever it started, even after a failure.
    this.child = spawn("bash", ["--noprofile", "--norc"], { cwd: fileURLToPath(ROOT), env, detached: true });
    this.child.stdout.on("data", (chunk: Buffer) => {
      this.stdout += chunk.toString("utf8");
      this.transcript += chunk.toString("utf8");
      this.changed.emit("change");
    });
    let partial = "";
    this.child.stderr.on("data", (chunk: Buffer) => {
      const text = partial + chunk.toString("utf8");
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        this.transcript += `${line}\n`;
        const job = /^\[([\w-]+)\] (.*)$/.exec(line);
        if (job) this.jobs.get(job[1] as string)?.push(job[2] as string);
      }
      this.changed.emit("change");
    });
    this.child.once("exit", () => {
      this.exited = true;
      this.changed.emit("change");
    });
    this.child.stdin.write("set -eo pipefail\n");
  }

  /** What the session printed, for a failure's message: the end of it. */
  tail(): string {
    return this.transcript.slice(-6000);
  }

  private async until<T>(probe: () => T | undefined, what: string, timeoutMs = READY_MS): Promise<T> {
    const deadline = AbortSignal.timeout(timeoutMs);
    for (;;) {
      const found = probe();
      if (found !== undefined) return found;
      if (this.exited)
        throw new Error(`the shell ended (a command failed under set -e) while waiting for ${what}\n${this.tail()}`);
      await once(this.changed, "change", { signal: deadline }).catch(() => {
        throw new Error(`timed out waiting for ${what}\n${this.tail()}`);
      });
    }
  }

  /** Runs a block in the shell itself (so its variables stay set) and resolves with what it printed. */
  async run(code: string, where: string, cwd?: string): Promise<string> {
    const file = join(this.folder, `block-${++this.blocks}.sh`);
    writeFileSync(file, `${code}\n`);
    const from = this.stdout.length;
    const source = cwd === undefined ? `. ${file}` : `{ pushd ${cwd} > /dev/null; . ${file}; popd > /dev/null; }`;
    this.child.stdin.write(`${source} < /dev/null\nprintf '\\n${DONE}\\n'\n`);
    return this.until(() => {
      const end = this.stdout.indexOf(`\n${DONE}\n`, from);
      return end === -1 ? undefined : this.stdout.slice(from, end);
    }, `the block at ${where} to finish`);
  }

  /** Starts a server command in the background; resolves with its pid (npm's, which a supervisor would signal). */
  async start(name: string, command: string): Promise<number> {
    this.jobs.set(name, []);
    const from = this.stdout.length;
    this.child.stdin.write(`${command} > >(sed -u 's/^/[${name}] /' >&2) 2>&1 &\nprintf '__pid__ %s\\n' "$!"\n`);
    return this.until(() => {
      const match = /__pid__ (\d+)\n/.exec(this.stdout.slice(from));
      return match ? Number(match[1]) : undefined;
    }, `${name} to start`);
  }

  line(name: string, test: (line: string) => boolean, what: string): Promise<string> {
    return this.until(() => this.jobs.get(name)?.find(test), what);
  }

  /** SIGTERM to the job's pid; resolves with its exit status once the shell has reaped it. */
  async stop(pid: number, name: string): Promise<number> {
    process.kill(pid, "SIGTERM");
    const from = this.stdout.length;
    this.child.stdin.write(`if wait ${pid}; then s=0; else s=$?; fi; printf '__exit__ %s\\n' "$s"\n`);
    return this.until(() => {
      const match = /__exit__ (\d+)\n/.exec(this.stdout.slice(from));
      return match ? Number(match[1]) : undefined;
    }, `${name} to stop after SIGTERM`);
  }

  close(): void {
    try {
      process.kill(-(this.child.pid as number), "SIGKILL");
    } catch {
      // The group has ended already.
    }
  }
}

function jsonLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The text of an SSE completion stream: its chunks' `delta.content`, joined. */
function streamedText(output: string): string {
  return output
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map(
      (line) =>
        (JSON.parse(line.slice("data: ".length)) as { choices: Array<{ delta?: { content?: string } }> }).choices[0]
          ?.delta?.content ?? "",
    )
    .join("");
}

describe("the walkthrough blocks", () => {
  test("every sh block of a walked section carries a known marker, in order", () => {
    const text = [
      "# Doc",
      "## Walk",
      "<!-- walkthrough: relay -->",
      "```sh",
      "npm start",
      "```",
      "   <!-- walkthrough: shell -->",
      "",
      "   ```sh",
      "   echo hi",
      "   ```",
      "## Other",
      "```sh",
      "ls",
      "```",
    ].join("\n");
    assert.deepEqual(
      walkthroughSteps("x.md", text, ["Walk"]).map(({ kind, code }) => [kind, code]),
      [
        ["relay", "npm start"],
        ["shell", "echo hi"],
      ],
    );
    assert.throws(
      () => walkthroughSteps("x.md", "## Walk\n```sh\nls\n```", ["Walk"]),
      /x\.md:2: an sh block in "Walk" without/,
    );
    assert.throws(
      () => walkthroughSteps("x.md", "## Walk\n<!-- walkthrough: maybe -->\n```sh\nls\n```", ["Walk"]),
      /unknown walkthrough step "maybe"/,
    );
    assert.throws(() => walkthroughSteps("x.md", "## Walk\n", ["Walk", "Gone"]), /no heading "Gone"/);
  });

  test("install and the test run are dropped, the port and the key placeholder replaced", () => {
    const subs: Substitutions = { port: 4321, key: "svc_ws_abc" };
    assert.equal(
      runnable("npm install && npm start   # serves on 127.0.0.1:8787\nnpm test  # all", subs),
      "npm start   # serves on 127.0.0.1:4321",
    );
    assert.equal(
      runnable("export KEY=svc_ws_...   # from the start", subs),
      "export KEY=svc_ws_abc   # from the start",
    );
    assert.equal(
      serverCommand({ kind: "relay", code: "# first\nFOO=1 npm start   # note", where: "x" }, subs),
      "FOO=1 npm start",
    );
    assert.throws(
      () => serverCommand({ kind: "agent", code: "a\nb", where: "x.md:3" }, subs),
      /x\.md:3: a agent block must hold one command, not 2/,
    );
  });
});

describe("the README, pasted", () => {
  const folder = mkdtempSync(join(tmpdir(), "tab-relay-readme-"));
  let session: Session | undefined;
  after(() => {
    session?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test(
    "quick start, a completion, the echo agent answering a mention in #general, and a clean stop",
    { timeout: 240_000 },
    async () => {
      const steps: Step[] = [
        ...readSteps(ROOT, "README.md", README_SECTIONS),
        ...readSteps(ROOT, "docs/agents.md", AGENT_SECTIONS),
      ];
      const kinds = steps.map((step) => step.kind);
      for (const kind of ["relay", "agent"] as const)
        assert.ok(kinds.includes(kind), `the walkthrough has no ${kind} step: ${kinds.join(", ")}`);

      const port = await freePort();
      const inherited = Object.fromEntries(
        Object.entries(process.env).filter(
          ([name, value]) => value !== undefined && !name.startsWith("TAB_RELAY_") && !name.startsWith("npm_"),
        ),
      ) as Record<string, string>;
      session = new Session(folder, {
        ...inherited,
        TAB_RELAY_DATA: join(folder, "data"),
        TAB_RELAY_PORT: String(port),
        PORT: "0",
        ECHO_AGENT_CREDENTIALS: join(folder, "echo-agent.json"),
      });
      const shell = session;
      const subs: Substitutions = { port };
      let relay: { name: string; pid: number } | undefined;
      let agent: { name: string; pid: number } | undefined;
      const outputs: Array<{ step: Step; output: string }> = [];

      // `code` as the README runs it: the e2e's code-server with a profile in the test's folder, when installed.
      const vscode = join(folder, "vscode");
      const downloads = join(folder, "downloads");
      mkdirSync(downloads);
      const codeServer = existsSync(codeServerBin()) ? codeServerBin() : undefined;
      for (const dir of ["user-data", "extensions", "config", "data", "cache"])
        mkdirSync(join(vscode, dir), { recursive: true });
      // code-server otherwise keeps its config and caches in ~ (as test/e2e/codeServer.ts isolates it).
      const install = codeServer
        ? `XDG_CONFIG_HOME="${vscode}/config" XDG_DATA_HOME="${vscode}/data" XDG_CACHE_HOME="${vscode}/cache" ` +
          `"${codeServer}" --user-data-dir "${vscode}/user-data" --extensions-dir "${vscode}/extensions" "$@"`
        : ":";
      await shell.run(`code() { printf '%s\\n' "$@" > "${folder}/code-args"; ${install}; }`, "the test's code");

      const stopRelay = async () => {
        if (relay === undefined) return;
        const { name, pid } = relay;
        assert.equal(await shell.stop(pid, name), 0, `${name} exits 0 on SIGTERM\n${shell.tail()}`);
        assert.ok(
          shell.jobs.get(name)?.some((line) => jsonLine(line)?.msg === "relay stopped"),
          `${name} logs a clean stop\n${shell.tail()}`,
        );
        relay = undefined;
      };

      for (const step of steps) {
        switch (step.kind) {
          case "skip":
            break;
          case "relay": {
            // "If it is already running, stop it first": a restart on the same data folder.
            await stopRelay();
            const name = `relay-${steps.indexOf(step)}`;
            relay = { name, pid: await shell.start(name, serverCommand(step, subs)) };
            await shell.line(
              name,
              (line) => line.includes(`serving on http://127.0.0.1:${port}`),
              `${step.where}: the relay serving on ${port}`,
            );
            if (subs.key === undefined) {
              const printed = shell.jobs
                .get(name)
                ?.join("\n")
                .match(/svc_ws_[A-Za-z0-9]+/)?.[0];
              assert.ok(printed, `the first start prints the owner key\n${shell.tail()}`);
              subs.key = printed;
            }
            break;
          }
          case "agent": {
            const name = `agent-${steps.indexOf(step)}`;
            agent = { name, pid: await shell.start(name, serverCommand(step, subs)) };
            await shell.line(
              name,
              (line) => jsonLine(line)?.kind === "listening",
              `${step.where}: the agent listening`,
            );
            break;
          }
          case "shell": {
            // The extension's download lands in the test's folder, not in the checkout the session runs in.
            const cwd = step.code.includes("/downloads/") ? downloads : undefined;
            outputs.push({ step, output: await shell.run(runnable(step.code, subs), step.where, cwd) });
            break;
          }
        }
      }

      const completion = outputs.find(({ step }) => step.code.includes("/chat/completions"));
      assert.ok(completion, "the README asks for a completion");
      assert.match(completion.output, /^data: \[DONE\]$/m, completion.output);
      assert.match(
        streamedText(completion.output),
        /return a \+ b;/,
        "the local engine continues with the earlier copy's body, as the README says",
      );

      // The README's install line: the file the relay served is this checkout's package (npm start made it), and
      // VS Code's --install-extension took it.
      assert.ok(
        outputs.some(({ step }) => step.code.includes("/downloads/tab-relay.vsix")),
        "the README downloads the extension from the relay",
      );
      const served = readFileSync(join(fileURLToPath(ROOT), "extension/dist/tab-relay-vscode.vsix"));
      assert.ok(readFileSync(join(downloads, "tab-relay.vsix")).equals(served), "the download is npm start's package");
      assert.deepEqual(readFileSync(join(folder, "code-args"), "utf8").split("\n").filter(Boolean), [
        "--install-extension",
        "tab-relay.vsix",
      ]);
      if (codeServer === undefined)
        console.error("[walkthrough] no code-server: the install was not run, only its call");
      else {
        const manifest = JSON.parse(readFileSync(join(fileURLToPath(ROOT), "extension/package.json"), "utf8")) as {
          publisher: string;
          name: string;
          version: string;
        };
        const installed = JSON.parse(readFileSync(join(vscode, "extensions/extensions.json"), "utf8")) as Array<{
          identifier: { id: string };
          version: string;
        }>;
        assert.deepEqual(
          installed.map(({ identifier, version }) => [identifier.id.toLowerCase(), version]),
          [[`${manifest.publisher}.${manifest.name}`.toLowerCase(), manifest.version]],
        );
      }

      assert.ok(agent, "the walkthrough starts the agent");
      const created = shell.jobs
        .get(agent.name)
        ?.map(jsonLine)
        .find((line) => line?.kind === "created");
      assert.ok(created, `the agent creates itself on the relay\n${shell.tail()}`);
      const mention = outputs
        .map(({ step }) => /"text":"([^"]*@Echo[^"]*)"/.exec(step.code)?.[1])
        .find((text) => text !== undefined);
      assert.ok(mention, "the walkthrough mentions @Echo");
      const expected = echoText({
        agent: { id: String(created.agent), name: "Echo" },
        message: { text: mention },
      } as MessageCreatedEvent);
      const last = outputs.at(-1);
      assert.ok(
        last?.output.includes(`"text":"${expected}"`),
        `the last block shows the echo "${expected}":\n${last?.output}`,
      );
      const general = outputs.find(({ step }) => step.code.includes("general"));
      assert.ok(general, "the walkthrough talks in #general");

      const { name, pid } = agent;
      assert.equal(await shell.stop(pid, name), 0, `the agent exits 0 on SIGTERM\n${shell.tail()}`);
      await stopRelay();
    },
  );
});
