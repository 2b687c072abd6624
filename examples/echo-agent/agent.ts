/**
 * CLI for the echo agent: `npx tsx examples/echo-agent/agent.ts [--port 8788] [--host 127.0.0.1]`.
 * Secrets come only from the environment (AGENT_SIGNING_SECRET, AGENT_TOKEN) so they never show up in `ps`.
 */
import { parseArgs } from "node:util";
import { isValidSigningSecret } from "../../shared/src/webhooks/index";
import { DEFAULT_HOST, DEFAULT_PORT, startEchoAgent } from "./server";

const USAGE = `Usage: AGENT_SIGNING_SECRET=whsec_... AGENT_TOKEN=svc_agent_... npx tsx examples/echo-agent/agent.ts [--port N] [--host H]

  --port N   port to listen on (env PORT, default ${DEFAULT_PORT})
  --host H   address to bind (env HOST, default ${DEFAULT_HOST})`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(1);
}

const { values } = parseArgs({
  options: { port: { type: "string" }, host: { type: "string" }, help: { type: "boolean", short: "h" } },
  strict: true,
});
if (values.help === true) {
  console.log(USAGE);
  process.exit(0);
}

const signingSecret = process.env.AGENT_SIGNING_SECRET ?? "";
const token = process.env.AGENT_TOKEN ?? "";
if (signingSecret === "") fail("AGENT_SIGNING_SECRET is not set (the whsec_ secret shown when the agent was created).");
if (!isValidSigningSecret(signingSecret)) fail("AGENT_SIGNING_SECRET is not a valid whsec_ secret (base64 of at least 24 bytes).");
if (token === "") fail("AGENT_TOKEN is not set (the svc_agent_ token shown when the agent was created).");

const portText = values.port ?? process.env.PORT ?? String(DEFAULT_PORT);
const port = Number(portText);
if (!/^\d+$/.test(portText) || port > 65535) fail(`Invalid port: ${portText}`);
const host = values.host ?? process.env.HOST ?? DEFAULT_HOST;

// No top-level await: the repository root is not "type": "module", so tsx may load this file as CommonJS.
startEchoAgent({ signingSecret, token, port, host }).then(
  (agent) => {
    console.log(JSON.stringify({ at: new Date().toISOString(), kind: "listening", url: agent.url }));
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
