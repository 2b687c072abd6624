import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { openApiDocument, openApiPath } from "../../relay/src/openapi/document";
import { OPERATIONS, isUpgrade } from "../../relay/src/openapi/operations";
import { packageVersion } from "../../relay/src/version";
import { HTTP_ROUTES, MOUNTS, WEBHOOK_URL, fillPath } from "../fuzz/catalogue";
import { type Fixtures, createFixtures } from "../fuzz/fixtures";
import { credentialHeaders } from "../fuzz/mutate";
import { createRandom } from "../fuzz/random";
import { type FuzzRelay, RAISED_RATE_LIMITS, initDataFolder, startRelayProcess } from "../fuzz/relay";
import { type WebhookReceiver, startWebhookReceiver } from "../support/webhookReceiver";

/**
 * The relay's real answers against its OpenAPI document: a relay process with the fuzz suite's fixtures, one valid
 * request per route (the fuzz catalogue's sample), the same request without a credential, a streamed completion, and
 * the webhook events an agent receives. Each JSON answer must validate against the schema the document gives its
 * status (ajv, JSON Schema 2020-12, OpenAPI 3.1's dialect), and the answers of rate-limited routes carry the
 * X-RateLimit-* headers the document names.
 */

// ajv-formats is CommonJS whose default export is the plugin.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type Json = Record<string, unknown>;
const DOCUMENT_ID = "https://tab-relay.invalid/openapi.json";
const document = openApiDocument(packageVersion()) as {
  paths: Record<string, Record<string, { responses: Record<string, Json> }>>;
  components: { schemas: Record<string, Json>; responses: Record<string, Json> };
};

const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
ajv.addSchema({ $id: DOCUMENT_ID, components: document.components });
const validators = new Map<string, ValidateFunction>();
function validator(schema: Json): ValidateFunction {
  const key = JSON.stringify(schema);
  let found = validators.get(key);
  if (!found) {
    // References in the document are relative to it.
    const rebased = JSON.parse(key.replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`)) as Json;
    found = ajv.compile(rebased);
    validators.set(key, found);
  }
  return found;
}

/** The response object the document gives a status of an operation, with a `$ref` to a shared response followed. */
function documented(method: string, path: string, status: number): Json | undefined {
  const responses = document.paths[path]?.[method]?.responses ?? {};
  const response = responses[String(status)];
  if (response === undefined) return undefined;
  const target = response["$ref"];
  return typeof target === "string"
    ? document.components.responses[target.replace("#/components/responses/", "")]
    : response;
}

interface Checked {
  route: string;
  status: number;
}

describe("the relay's answers against its OpenAPI document", () => {
  const tracked = new Set<ChildProcess>();
  let relay: FuzzRelay;
  let fixtures: Fixtures;
  let receiver: WebhookReceiver;
  let removeData: () => void;
  const problems: string[] = [];
  const checked: Checked[] = [];

  /** Sends one request and checks its answer against the document; returns the status and the parsed body. */
  async function exchange(
    method: string,
    path: string,
    documentPath: string,
    init: { headers?: [string, string][]; body?: unknown; query?: [string, string][] } = {},
  ): Promise<{ status: number; body: unknown; text: string }> {
    const url = new URL(path, relay.url);
    for (const [name, value] of init.query ?? []) url.searchParams.append(name, value);
    const headers = new Headers(init.headers ?? []);
    if (init.body !== undefined) headers.set("Content-Type", "application/json");
    const response = await fetch(url, {
      method,
      headers,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await response.text();
    const label = `${method} ${path} → ${response.status}`;
    checked.push({ route: `${method.toLowerCase()} ${documentPath}`, status: response.status });
    const spec = documented(method.toLowerCase(), documentPath, response.status);
    if (spec === undefined) {
      problems.push(`${label}: the document has no ${response.status} for this operation (${text.slice(0, 200)})`);
      return { status: response.status, body: undefined, text };
    }
    const headerSpecs = (spec["headers"] ?? {}) as Record<string, unknown>;
    for (const name of Object.keys(headerSpecs)) {
      if (name.startsWith("X-RateLimit") && response.headers.get(name) === null)
        problems.push(`${label}: no ${name} header`);
    }
    const content = (spec["content"] ?? {}) as Record<string, { schema: Json }>;
    const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
    const media = content[type];
    if (media === undefined) {
      if (Object.keys(content).length > 0 || text !== "")
        problems.push(
          `${label}: answered ${type || "no content type"}, the document says ${Object.keys(content).join(", ")}`,
        );
      return { status: response.status, body: undefined, text };
    }
    if (type === "application/json") {
      const body = JSON.parse(text) as unknown;
      const validate = validator(media.schema);
      if (!validate(body)) problems.push(`${label}: ${ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`);
      return { status: response.status, body, text };
    }
    if (type === "text/event-stream") {
      const chunk = validator(media.schema["contentSchema"] as Json);
      for (const line of text.split("\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const frame = JSON.parse(line.slice(6)) as unknown;
        if (!chunk(frame)) problems.push(`${label}: a frame: ${ajv.errorsText(chunk.errors)} in ${line.slice(0, 300)}`);
      }
    }
    return { status: response.status, body: undefined, text };
  }

  before(async () => {
    const data = initDataFolder();
    removeData = data.remove;
    relay = await startRelayProcess({ dataDir: data.dataDir, rateLimits: RAISED_RATE_LIMITS, tracked });
    fixtures = await createFixtures(relay.url, data.ownerKey);
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await relay?.stop();
    for (const child of tracked) child.kill("SIGKILL");
    await receiver?.close();
    removeData?.();
  });

  test("every route's sample answer, and its answer without a credential, is what the document says", async () => {
    const random = createRandom(2511);
    for (const route of HTTP_ROUTES) {
      const sample = route.sample(fixtures, random);
      const path = `${MOUNTS[route.mount][0]}${fillPath(route.path, sample.params)}`;
      const documentPath = openApiPath(route);
      // An earlier sample may have taken the managed agent's webhook URL away, and an agent with nowhere to deliver
      // refuses a test event or a redelivery (400); its URL is put back first.
      if (route.path.endsWith("/test-event") || route.path.endsWith("/redeliver"))
        await exchange("PATCH", `/api/v1/agents/${fixtures.managedAgent.id}`, "/api/v1/agents/{id}", {
          headers: credentialHeaders("owner", fixtures),
          body: { webhook_url: WEBHOOK_URL },
        });
      await exchange(route.method, path, documentPath, {
        headers: credentialHeaders(sample.credential, fixtures),
        body: sample.body,
        ...(sample.query ? { query: sample.query } : {}),
      });
      if (sample.credential !== "none") await exchange(route.method, path, documentPath, { body: sample.body });
    }
    assert.deepEqual(problems, []);
    const answered = new Set(checked.filter((c) => c.status < 300).map((c) => c.route));
    const unanswered = OPERATIONS.filter((operation) => !isUpgrade(operation))
      .map((operation) => `${operation.method} ${openApiPath(operation)}`)
      .filter((route) => !answered.has(route));
    assert.deepEqual(
      unanswered,
      [],
      `each operation was seen answering 2xx: ${JSON.stringify(checked.filter((c) => unanswered.includes(c.route)))}`,
    );
    assert.ok(
      checked.some((c) => c.status === 401),
      "refusals were checked too",
    );
  });

  test("a streamed completion's frames are the document's ChatCompletionChunk", async () => {
    const random = createRandom(7);
    const route = HTTP_ROUTES.find((candidate) => candidate.path === "/tab/chat/completions");
    assert.ok(route);
    const sample = route.sample(fixtures, random);
    const answer = await exchange("POST", "/api/v1/tab/chat/completions", "/api/v1/tab/chat/completions", {
      headers: credentialHeaders("owner", fixtures),
      body: { ...(sample.body as Json), stream: true, stream_options: { include_usage: true } },
    });
    assert.equal(answer.status, 200);
    assert.match(answer.text, /data: \[DONE\]/);
    assert.deepEqual(problems, []);
  });

  test("the webhook events an agent receives are the document's MessageCreatedEvent and PingEvent", async () => {
    const headers = credentialHeaders("owner", fixtures);
    const created = await exchange("POST", "/api/v1/agents", "/api/v1/agents", {
      headers,
      body: { name: "Contract Agent", webhook_url: receiver.url },
    });
    const agentId = (created.body as { data: { agent: { id: string } } }).data.agent.id;
    await exchange("POST", `/api/v1/channels/${fixtures.channel.id}/members`, "/api/v1/channels/{id}/members", {
      headers,
      body: { agent_id: agentId },
    });
    await exchange("POST", `/api/v1/agents/${agentId}/test-event`, "/api/v1/agents/{id}/test-event", { headers });
    await exchange(
      "POST",
      `/api/v1/conversations/channel/${fixtures.channel.id}/messages`,
      "/api/v1/conversations/{type}/{id}/messages",
      { headers, body: { text: "@Contract Agent does this match?" } },
    );
    const deliveries = await receiver.waitFor(2, 20_000);
    const webhooks = (openApiDocument(packageVersion()) as { webhooks: Record<string, Json> }).webhooks;
    for (const delivery of deliveries) {
      const event = JSON.parse(delivery.body) as { type: string };
      const operation = webhooks[event.type] as {
        post: { requestBody: { content: Record<string, { schema: Json }> } };
      };
      assert.ok(operation, `the document has a webhook for ${event.type}`);
      const validate = validator(operation.post.requestBody.content["application/json"]?.schema ?? {});
      assert.ok(validate(event), `${event.type}: ${ajv.errorsText(validate.errors)} in ${delivery.body}`);
    }
    assert.deepEqual(deliveries.map((delivery) => (JSON.parse(delivery.body) as { type: string }).type).sort(), [
      "message.created",
      "ping",
    ]);
    assert.deepEqual(problems, []);
  });
});
