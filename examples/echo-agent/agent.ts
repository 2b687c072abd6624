/**
 * CLI for the echo agent: `npx tsx examples/echo-agent/agent.ts [--port 8788] [--host 127.0.0.1]`.
 * Secrets come only from the environment (AGENT_SIGNING_SECRET, AGENT_TOKEN) so they never show up in `ps`.
 * With `--relay URL` and an API key in TAB_RELAY_API_KEY it connects itself first: it creates the agent with its
 * own webhook URL and uses the token and signing secret it gets back, so one command is enough.
 * With `--socket` it listens on nothing and holds a Socket Mode connection to the relay instead.
 */
import { parseArgs } from "node:util";
import { isValidSigningSecret } from "../../shared/src/webhooks/index";
import { DEFAULT_HOST, DEFAULT_PORT, startEchoAgent } from "./server";
import { startEchoSocketAgent } from "./socket";

const USAGE = `Usage: AGENT_SIGNING_SECRET=whsec_... AGENT_TOKEN=svc_agent_... npx tsx examples/echo-agent/agent.ts [--port N] [--host H]
   or: TAB_RELAY_API_KEY=svc_ws_... npx tsx examples/echo-agent/agent.ts --relay http://127.0.0.1:8787 [--name Echo]
   or: npx tsx examples/echo-agent/agent.ts --socket --relay http://127.0.0.1:8787  (with either pair of variables above)

  --port N      port to listen on (env PORT, default ${DEFAULT_PORT})
  --host H      address to bind (env HOST, default ${DEFAULT_HOST})
  --relay URL   connect a new agent on this relay first (needs an API key with agents.write in TAB_RELAY_API_KEY;
                a relay on your machine must allow private webhook URLs: TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true)
  --socket      Socket Mode: connect to the relay given by --relay over a WebSocket instead of listening for
                webhooks (works behind NAT). Uses AGENT_TOKEN and AGENT_SIGNING_SECRET when AGENT_TOKEN is set,
                else creates a new agent without a webhook URL with TAB_RELAY_API_KEY
  --name NAME   the new agent's name (default Echo)`;

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
if (socketMode && (values.port !== undefined || values.host !== undefined)) fail("--socket listens on nothing: drop --port and --host.");
const portText = values.port ?? process.env.PORT ?? String(DEFAULT_PORT);
const port = Number(portText);
if (!/^\d+$/.test(portText) || port < 1 || port > 65535) fail(`Invalid port: ${portText}`);
const host = values.host ?? process.env.HOST ?? DEFAULT_HOST;

interface Credentials {
  signingSecret: string;
  token: string;
}

/** Creates the agent on the relay (pointing at this process unless it uses Socket Mode) and returns its secrets (shown this once). */
async function connect(relay: string): Promise<Credentials> {
  const apiKey = process.env.TAB_RELAY_API_KEY ?? "";
  if (apiKey === "") fail("--relay needs an API key with the agents.write scope in TAB_RELAY_API_KEY.");
  const webhookUrl = socketMode ? null : `http://${host.includes(":") ? `[${host}]` : host}:${port}/`;
  const response = await fetch(new URL("/api/v1/agents", relay), {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({
      name: values.name ?? "Echo",
      description: "Echoes what you tell it (examples/echo-agent)",
      ...(webhookUrl === null ? {} : { webhook_url: webhookUrl }),
    }),
  });
  const body = (await response.json()) as { data?: { agent: { id: string; name: string }; token: string; signing_secret: string }; error?: { message: string } };
  if (!response.ok || !body.data) fail(`The relay refused to create the agent: ${body.error?.message ?? response.status}`);
  console.log(
    JSON.stringify({ at: new Date().toISOString(), kind: "created", agent: body.data.agent.id, name: body.data.agent.name, ...(webhookUrl === null ? { socket: true } : { webhook_url: webhookUrl }) }),
  );
  return { signingSecret: body.data.signing_secret, token: body.data.token };
}

function fromEnvironment(): Credentials {
  const signingSecret = process.env.AGENT_SIGNING_SECRET ?? "";
  const token = process.env.AGENT_TOKEN ?? "";
  if (signingSecret === "") fail("AGENT_SIGNING_SECRET is not set (the whsec_ secret shown when the agent was created), or use --relay.");
  if (!isValidSigningSecret(signingSecret)) fail("AGENT_SIGNING_SECRET is not a valid whsec_ secret (base64 of at least 24 bytes).");
  if (token === "") fail("AGENT_TOKEN is not set (the svc_agent_ token shown when the agent was created).");
  return { signingSecret, token };
}

function credentials(): Promise<Credentials> {
  if (values.relay === undefined) return Promise.resolve(fromEnvironment());
  // In Socket Mode --relay is also where to connect, so an existing agent's secrets are used when given.
  if (socketMode && (process.env.AGENT_TOKEN ?? "") !== "") return Promise.resolve(fromEnvironment());
  return connect(values.relay);
}

function start({ signingSecret, token }: Credentials): Promise<{ close(): Promise<void> }> {
  if (!socketMode) {
    return startEchoAgent({ signingSecret, token, port, host }).then((agent) => {
      console.log(JSON.stringify({ at: new Date().toISOString(), kind: "listening", url: agent.url }));
      return agent;
    });
  }
  return startEchoSocketAgent({
    relay: values.relay as string,
    signingSecret,
    token,
    onClosed(code, reason) {
      // Paused, removed or a new token: reconnecting cannot help, so the process ends and says why.
      console.error(`The relay ended the Socket Mode connection for good: ${code} ${reason}`);
      process.exit(1);
    },
  });
}

// No top-level await: the repository root is not "type": "module", so tsx may load this file as CommonJS.
credentials()
  .then(start)
  .then(
    (agent) => {
      let stopping = false;
      for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.on(signal, () => {
          if (stopping) process.exit(1);
          stopping = true;
          agent.close().then(
            () => process.exit(0),
            () => process.exit(1),
          );
        });
      }
    },
    (error: unknown) => fail(`Could not start: ${error instanceof Error ? error.message : String(error)}`),
  );
