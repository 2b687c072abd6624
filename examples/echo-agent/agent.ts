/**
 * CLI for the echo agent: `npx tsx examples/echo-agent/agent.ts [--port 18788] [--host 127.0.0.1]`.
 * Secrets come only from the environment (AGENT_SIGNING_SECRET, AGENT_TOKEN) or the credentials file, so they never
 * show up in `ps`.
 * With `--relay URL` it connects itself: it opens its port first, then reuses the agent saved in the credentials
 * file, or creates one with its own webhook URL (with an API key in TAB_RELAY_API_KEY) and saves its token and
 * signing secret there, so one command is enough, the first time and every time after.
 * With `--socket` it listens on nothing and holds a Socket Mode connection to the relay instead.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { isValidSigningSecret } from "@tab-relay/agent";
import { DEFAULT_CREDENTIALS_FILE, type SavedAgent, findSaved, forgetAgent, relayKey, saveAgent } from "./credentials";
import { DEFAULT_HOST, DEFAULT_PORT, type OpenEchoAgent, openEchoAgent } from "./server";
import { startEchoSocketAgent } from "./socket";

/** What the start-up check reads of a delivery in GET /agents/{id}/deliveries (docs/api.md#delivery). */
interface Delivery {
  id: string;
  attempts: Array<{ outcome: "success" | "failed"; status_code: number | null; error: string | null }>;
}

/** How long the start-up check waits for the relay's first attempt at the test event. */
const REACHABILITY_WAIT_MS = 10_000;

const USAGE = `Usage: TAB_RELAY_API_KEY=svc_ws_... npx tsx examples/echo-agent/agent.ts --relay http://127.0.0.1:8787 [--name Echo] [--take-over]
   or: AGENT_SIGNING_SECRET=whsec_... AGENT_TOKEN=svc_agent_... npx tsx examples/echo-agent/agent.ts [--port N] [--host H]
   or: npx tsx examples/echo-agent/agent.ts --socket --relay http://127.0.0.1:8787  (with either of the above)

  --port N      port to listen on (env PORT, default ${DEFAULT_PORT}; 0 picks a free one)
  --host H      address to bind (env HOST, default ${DEFAULT_HOST})
  --relay URL   connect to this relay first: reuse the agent saved in the credentials file, or create one (needs an
                API key with agents.write in TAB_RELAY_API_KEY; a relay on your machine must allow private webhook
                URLs: TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true) and save its token and signing secret there
  --name NAME   the agent's name (default Echo)
  --take-over   when an agent of that name exists but is not in the credentials file, give it a new token and
                signing secret (the old ones stop working), point it at this process and save them
  --credentials FILE
                where the token and signing secret are kept, mode 0600 (env ECHO_AGENT_CREDENTIALS,
                default ${DEFAULT_CREDENTIALS_FILE} in the current directory)
  --socket      Socket Mode: connect to the relay given by --relay over a WebSocket instead of listening for
                webhooks (works behind NAT). Uses AGENT_TOKEN and AGENT_SIGNING_SECRET when AGENT_TOKEN is set;
                else as --relay above, an agent it creates having no webhook URL`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(1);
}

const { values } = parseArgs({
  options: {
    port: { type: "string" },
    host: { type: "string" },
    relay: { type: "string" },
    socket: { type: "boolean" },
    name: { type: "string" },
    "take-over": { type: "boolean" },
    credentials: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  strict: true,
});
if (values.help === true) {
  console.log(USAGE);
  process.exit(0);
}

const socketMode = values.socket === true;
if (socketMode && values.relay === undefined) fail("--socket needs --relay URL: the relay to connect to.");
if (socketMode && (values.port !== undefined || values.host !== undefined))
  fail("--socket listens on nothing: drop --port and --host.");
const portText = values.port ?? process.env.PORT ?? String(DEFAULT_PORT);
const port = Number(portText);
if (!/^\d+$/.test(portText) || port > 65535) fail(`Invalid port: ${portText}`);
const host = values.host ?? process.env.HOST ?? DEFAULT_HOST;
const name = values.name ?? "Echo";
const credentialsFile = resolve(values.credentials ?? process.env.ECHO_AGENT_CREDENTIALS ?? DEFAULT_CREDENTIALS_FILE);
if (values.relay !== undefined) {
  try {
    relayKey(values.relay);
  } catch {
    fail(`Invalid --relay URL: ${values.relay}`);
  }
}

interface Credentials {
  signingSecret: string;
  token: string;
  /** The agent's id on the relay, when this process connected itself (--relay). */
  agentId?: string;
}

function log(entry: Record<string, unknown>): void {
  console.log(JSON.stringify({ at: new Date().toISOString(), ...entry }));
}

interface Answer {
  status: number;
  data: Record<string, unknown> | undefined;
  error: { code?: string; message?: string } | undefined;
}

/** One call to the relay's API; `key` is the agent token for the Agent API, else the API key from the environment. */
async function call(
  relay: string,
  path: string,
  init: { method?: string; json?: unknown; key?: string; why?: string } = {},
): Promise<Answer> {
  let key = init.key;
  if (key === undefined) {
    key = process.env.TAB_RELAY_API_KEY ?? "";
    if (key === "") fail(`${init.why ?? "This"} needs an API key with the agents.write scope in TAB_RELAY_API_KEY.`);
  }
  const response = await fetch(`${relayKey(relay)}/api/v1${path}`, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.json === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
  const body = (await response.json().catch(() => ({}))) as {
    data?: Record<string, unknown>;
    error?: { code?: string; message?: string };
  };
  return { status: response.status, data: body.data, error: body.error };
}

function refused(what: string, answer: Answer): never {
  fail(`The relay refused to ${what}: ${answer.error?.message ?? `HTTP ${answer.status}`}`);
}

function save(relay: string, entry: Omit<SavedAgent, "relay" | "name">): Credentials {
  saveAgent(credentialsFile, { relay, name, ...entry });
  return { signingSecret: entry.signing_secret, token: entry.token, agentId: entry.agent_id };
}

/** The saved agent, if its token still works; pointed at `webhookUrl` when it was somewhere else. */
async function reuse(relay: string, webhookUrl: string | null): Promise<Credentials | undefined> {
  const saved = findSaved(credentialsFile, relay, name);
  if (saved === undefined) return undefined;
  const me = await call(relay, "/agent-api/me", { key: saved.token });
  if (me.status === 401) {
    // Removed, given a new token elsewhere, or a relay started over on a fresh data folder.
    log({ kind: "saved_agent_refused", agent: saved.agent_id, name, credentials: credentialsFile });
    forgetAgent(credentialsFile, relay, name);
    return undefined;
  }
  const paused = me.status === 403 && me.error?.code === "AGENT_PAUSED";
  if (me.status !== 200 && !paused) refused("check the saved agent's token", me);
  let webhook = saved.webhook_url;
  if (webhookUrl !== null && webhookUrl !== saved.webhook_url) {
    const moved = await call(relay, `/agents/${saved.agent_id}`, {
      method: "PATCH",
      json: { webhook_url: webhookUrl },
      why: `Pointing the saved agent at ${webhookUrl}`,
    });
    if (moved.status !== 200) refused(`point the saved agent at ${webhookUrl}`, moved);
    webhook = webhookUrl;
  }
  log({
    kind: "reused",
    agent: saved.agent_id,
    name,
    credentials: credentialsFile,
    ...(paused ? { state: "paused" } : {}),
    ...(webhookUrl === null ? { socket: true } : { webhook_url: webhook }),
  });
  return save(relay, {
    agent_id: saved.agent_id,
    webhook_url: webhook,
    token: saved.token,
    signing_secret: saved.signing_secret,
  });
}

/** Replaces the token and signing secret of the agent that holds this name, and points it here. */
async function takeOver(relay: string, webhookUrl: string | null): Promise<Credentials> {
  const listed = await call(relay, "/agents", { why: "--take-over" });
  if (listed.status !== 200) refused("list its agents", listed);
  const agents = listed.data as unknown as Array<{ id: string; name: string; webhook_url?: string | null }>;
  const agent = agents.find((candidate) => candidate.name.toLowerCase() === name.toLowerCase());
  if (agent === undefined) fail(`--take-over: no agent named ${name} on ${relayKey(relay)}.`);
  const token = await call(relay, `/agents/${agent.id}/token`, { method: "POST" });
  if (token.status !== 200) refused(`give ${name} a new token`, token);
  const secret = await call(relay, `/agents/${agent.id}/signing-secret`, { method: "POST" });
  if (secret.status !== 200) refused(`give ${name} a new signing secret`, secret);
  let webhook = agent.webhook_url ?? null;
  if (webhookUrl !== null && webhookUrl !== webhook) {
    const moved = await call(relay, `/agents/${agent.id}`, { method: "PATCH", json: { webhook_url: webhookUrl } });
    if (moved.status !== 200) refused(`point ${name} at ${webhookUrl}`, moved);
    webhook = webhookUrl;
  }
  log({
    kind: "taken_over",
    agent: agent.id,
    name,
    credentials: credentialsFile,
    ...(webhookUrl === null ? { socket: true } : { webhook_url: webhook }),
  });
  return save(relay, {
    agent_id: agent.id,
    webhook_url: webhook,
    token: String(token.data?.token),
    signing_secret: String(secret.data?.signing_secret),
  });
}

/** Reuses the saved agent, or creates one pointing at this process (none for Socket Mode) and saves its secrets. */
async function connect(relay: string, webhookUrl: string | null): Promise<Credentials> {
  const reused = await reuse(relay, webhookUrl);
  if (reused !== undefined) return reused;
  const created = await call(relay, "/agents", {
    method: "POST",
    json: {
      name,
      description: "Echoes what you tell it (examples/echo-agent)",
      ...(webhookUrl === null ? {} : { webhook_url: webhookUrl }),
    },
    why: "Creating the agent",
  });
  if (created.status === 409 && values["take-over"] === true) return takeOver(relay, webhookUrl);
  if (created.status === 409) {
    fail(
      `An agent named ${name} exists on ${relayKey(relay)}, and ${credentialsFile} does not hold its token and signing secret ` +
        `(they are shown once, when it is created). Run again with --take-over to give it new ones (the old ones stop working), ` +
        `point it here and save them; or choose another --name.`,
    );
  }
  if (created.status !== 201 || created.data === undefined) refused("create the agent", created);
  const agent = created.data.agent as { id: string };
  log({
    kind: "created",
    agent: agent.id,
    name,
    credentials: credentialsFile,
    ...(webhookUrl === null ? { socket: true } : { webhook_url: webhookUrl }),
  });
  return save(relay, {
    agent_id: agent.id,
    webhook_url: webhookUrl,
    token: String(created.data.token),
    signing_secret: String(created.data.signing_secret),
  });
}

function fromEnvironment(): Credentials {
  const signingSecret = process.env.AGENT_SIGNING_SECRET ?? "";
  const token = process.env.AGENT_TOKEN ?? "";
  if (signingSecret === "")
    fail("AGENT_SIGNING_SECRET is not set (the whsec_ secret shown when the agent was created), or use --relay.");
  if (!isValidSigningSecret(signingSecret))
    fail("AGENT_SIGNING_SECRET is not a valid whsec_ secret (base64 of at least 24 bytes).");
  if (token === "") fail("AGENT_TOKEN is not set (the svc_agent_ token shown when the agent was created).");
  return { signingSecret, token };
}

function credentials(webhookUrl: string | null): Promise<Credentials> {
  if (values.relay === undefined) return Promise.resolve(fromEnvironment());
  // In Socket Mode --relay is also where to connect, so an existing agent's secrets are used when given.
  if (socketMode && (process.env.AGENT_TOKEN ?? "") !== "") return Promise.resolve(fromEnvironment());
  return connect(values.relay, webhookUrl);
}

async function listen(): Promise<OpenEchoAgent> {
  try {
    return await openEchoAgent({ port, host });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      fail(
        `Port ${port} on ${host} is already in use (another program, or this agent running already). Choose another with --port N (or PORT=N); nothing was registered on the relay.`,
      );
    }
    throw error;
  }
}

/** What a signal stops; until it is set a signal ends the process at once. */
let running: { close(): Promise<void> } | undefined;
let stopping = false;
// Handlers before any line is printed: a supervisor that signals as soon as it reads one must not meet the default action.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    if (running === undefined) process.exit(0);
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

async function start(): Promise<void> {
  if (!socketMode) {
    // The port first: an agent registered with a URL this process cannot hold would receive nothing.
    const agent = await listen();
    running = agent;
    const connected = await credentials(`${agent.url}/`);
    agent.useCredentials(connected);
    log({ kind: "listening", url: agent.url });
    if (values.relay !== undefined && connected.agentId !== undefined)
      await checkReachable(values.relay, connected.agentId, `${agent.url}/`);
    return;
  }
  running = await startEchoSocketAgent({
    relay: values.relay as string,
    ...(await credentials(null)),
    onClosed(code, reason) {
      // Paused, removed or a new token: reconnecting cannot help, so the process ends and says why.
      console.error(`The relay ended the Socket Mode connection for good: ${code} ${reason}`);
      process.exit(1);
    },
  });
}

/**
 * Asks the relay for a test event (a ping, through the normal delivery path) and reads its first attempt. An agent
 * the relay cannot reach (its address refused without TAB_RELAY_WEBHOOK_ALLOW_PRIVATE, a firewall, a wrong host)
 * would otherwise look well and never hear a mention, with the next retry minutes away.
 */
async function checkReachable(relay: string, agentId: string, webhookUrl: string): Promise<void> {
  const unchecked = (reason: string) => log({ kind: "reachability_unchecked", reason });
  if ((process.env.TAB_RELAY_API_KEY ?? "") === "")
    return unchecked("no API key in TAB_RELAY_API_KEY to ask the relay for a test event");
  const sent = await call(relay, `/agents/${agentId}/test-event`, { method: "POST" });
  if (sent.status !== 202) return unchecked(`the test event was refused: ${sent.error?.message ?? sent.status}`);
  const eventId = sent.data?.id;
  const deadline = Date.now() + REACHABILITY_WAIT_MS;
  for (;;) {
    const listed = await call(relay, `/agents/${agentId}/deliveries?limit=10`);
    const deliveries = (listed.data ?? []) as unknown as Delivery[];
    const attempt = deliveries.find((delivery) => delivery.id === eventId)?.attempts[0];
    if (attempt?.outcome === "success") return log({ kind: "reachable", url: webhookUrl });
    if (attempt?.outcome === "failed") {
      const error = attempt.error ?? `HTTP ${String(attempt.status_code)}`;
      log({ kind: "unreachable", url: webhookUrl, error });
      console.error(
        `Warning: the relay at ${relayKey(relay)} cannot deliver to this agent at ${webhookUrl}: ${error}\n` +
          "Mentions will not reach it until that is fixed (the relay retries failed deliveries later).",
      );
      return;
    }
    if (Date.now() > deadline)
      return unchecked(`the relay made no delivery attempt within ${REACHABILITY_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Why starting failed, with the network cause Node's fetch keeps in `cause` (its own message is only "fetch failed"):
 * `connect ECONNREFUSED 127.0.0.1:9999` says more than the usage text would, which is for a wrong command line.
 */
function startFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause === undefined || typeof cause !== "object") return `Could not start: ${message}`;
  const detail = cause.message ?? cause.code ?? "";
  const where = values.relay === undefined ? "" : ` Is the relay running at ${values.relay}? Check --relay.`;
  return `Could not start: the relay at ${values.relay ?? "(no --relay)"} could not be reached (${detail}).${where}`;
}

// No top-level await: the repository root is not "type": "module", so tsx may load this file as CommonJS.
start().catch((error: unknown) => {
  console.error(startFailure(error));
  process.exit(1);
});
