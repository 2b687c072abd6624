// Starts the relay for the end-to-end test the way a user would: through its CLI, in a throwaway data dir.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT, waitForOutput, waitUntil } from "./codeServer";

export interface RelayUnderTest {
  url: string;
  workspaceSlug: string;
  apiKey: string;
  /** Revokes `apiKey` through the relay's API, as its owner would. */
  revokeKey(): Promise<void>;
  /** Stops the relay process but keeps its data; `start()` serves it again on the same port. */
  halt(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const CLI = join(REPO_ROOT, "relay/bin/tab-relay.js");
// The developer's own relay settings (provider, model, keys) must not leak in: the test wants the local engine.
const relayEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("TAB_RELAY_")));

/** `tab-relay init` in a fresh data dir, then `tab-relay serve` on a free port with the local engine. */
export async function startCliRelay(
  workspaceSlug: string,
  logFile: string,
  cli = CLI,
  /** Settings for `serve` beside the test's environment (its own TAB_RELAY_* are left out): an embedded model, say. */
  serveEnv: Record<string, string> = {},
): Promise<RelayUnderTest> {
  const data = mkdtempSync(join(tmpdir(), "tab-relay-e2e-data-"));
  const init = spawnSync(
    process.execPath,
    [cli, "init", "--data", data, "--workspace", workspaceSlug, "--owner", "e2e", "--json"],
    {
      encoding: "utf8",
      env: relayEnv,
      timeout: 30_000,
    },
  );
  if (init.status !== 0) throw new Error(`tab-relay init failed:\n${init.stdout}\n${init.stderr}`);
  const { api_key: apiKey } = JSON.parse(init.stdout) as { api_key: string };

  const log = createWriteStream(logFile);
  let server: ChildProcess | undefined;
  let exited = true;
  const serve = (port: string) => {
    const child = spawn(process.execPath, [cli, "serve", "--data", data, "--port", port, "--host", "127.0.0.1"], {
      env: { ...relayEnv, ...serveEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    exited = false;
    child.on("exit", () => (exited = true));
    server = child;
    return child;
  };
  const halt = async () => {
    if (!exited && server) {
      const child = server;
      child.kill("SIGTERM");
      await waitUntil("the relay to exit", 5_000, () => exited || undefined).catch(() => child.kill("SIGKILL"));
    }
  };
  const stop = async () => {
    await halt();
    rmSync(data, { recursive: true, force: true });
  };
  const listening = async (child: ChildProcess) => {
    const at = await waitForOutput(child, /serving on (http:\/\/\S+)/, 30_000, "tab-relay serve to listen");
    await waitUntil(
      "relay /healthz",
      10_000,
      async () =>
        (await fetch(`${at}/healthz`)
          .then((response) => response.ok)
          .catch(() => false)) || undefined,
    );
    return at;
  };
  let url: string;
  try {
    url = await listening(serve("0"));
  } catch (error) {
    await stop();
    throw error;
  }
  const start = async () => {
    await listening(serve(new URL(url).port));
  };
  return { url, workspaceSlug, apiKey, revokeKey: () => revokeOwnKey(url, apiKey), halt, start, stop };
}

async function revokeOwnKey(url: string, apiKey: string): Promise<void> {
  const headers = { authorization: `Bearer ${apiKey}` };
  const me = await fetch(`${url}/api/v1/me`, { headers });
  if (!me.ok) throw new Error(`GET /api/v1/me answered ${me.status}: ${await me.text()}`);
  const { data } = (await me.json()) as { data: { key: { id: string } } };
  const revoked = await fetch(`${url}/api/v1/api-keys/${encodeURIComponent(data.key.id)}`, {
    method: "DELETE",
    headers,
  });
  if (!revoked.ok)
    throw new Error(`DELETE /api/v1/api-keys/${data.key.id} answered ${revoked.status}: ${await revoked.text()}`);
}

/** The CLI runs the bundle in relay/dist; a fresh checkout has none until `npm run build`. */
export function ensureRelayBuilt(): void {
  if (existsSync(join(REPO_ROOT, "relay/dist/cli.js"))) return;
  const build = spawnSync("npm", ["run", "build", "-w", "relay"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 120_000,
  });
  if (build.status !== 0) throw new Error(`building the relay failed:\n${build.stdout}\n${build.stderr}`);
}
