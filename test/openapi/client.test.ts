import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Api } from "@tab-relay/shared";
import { openApiDocument } from "../../relay/src/openapi/document";
import { packageVersion } from "../../relay/src/version";
import { runCommand } from "../support/relayProcess";
import { type TestRelay, startTestRelay } from "../support/relayHarness";

/**
 * A client generated from the OpenAPI document (openapi-typescript, then openapi-fetch with those types; the client
 * is test/openapi/client/client.ts) type-checks under the repository's strict settings, and calls a running relay for
 * a completion, an agent's reply through the Agent API, and a usage read.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLIENT = join(ROOT, "test/openapi/client");

describe("a client generated from the OpenAPI document", () => {
  let relay: TestRelay;

  before(async () => {
    const file = join(CLIENT, "openapi.json");
    writeFileSync(file, JSON.stringify(openApiDocument(packageVersion())));
    const generated = await runCommand(
      join(ROOT, "node_modules/.bin/openapi-typescript"),
      [file, "--output", join(CLIENT, "schema.d.ts")],
      { cwd: CLIENT, env: process.env, killAfterMs: 120_000 },
    );
    assert.equal(generated.status, 0, `${generated.stdout}\n${generated.stderr}`);
    relay = await startTestRelay();
  });
  after(async () => {
    await relay?.close();
  });

  test("type-checks against the generated types", async () => {
    const tsc = await runCommand(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", CLIENT], {
      cwd: CLIENT,
      env: process.env,
      killAfterMs: 120_000,
    });
    assert.equal(tsc.status, 0, `${tsc.stdout}\n${tsc.stderr}`);
  });

  test("completes, posts an agent's reply and reads usage from a running relay", async () => {
    const channel = await relay.request("/api/v1/channels", { method: "POST", json: { name: "generated" } });
    const channelId = ((await channel.json()) as { data: Api.Conversation }).data.id;
    const created = await relay.request("/api/v1/agents", { method: "POST", json: { name: "Generated" } });
    const agent = ((await created.json()) as { data: Api.AgentCreated }).data;
    const joined = await relay.request(`/api/v1/channels/${channelId}/members`, {
      method: "POST",
      json: { agent_id: agent.agent.id },
    });
    assert.equal(joined.status, 201);

    // Loaded by path, so this file's own type check does not follow it to the generated schema.d.ts.
    const { runGeneratedClient } = (await import(pathToFileURL(join(CLIENT, "client.ts")).href)) as {
      runGeneratedClient(options: Record<string, string>): Promise<{
        completion: string;
        replyId: string;
        replyAuthor: string;
        requests: number;
      }>;
    };
    const result = await runGeneratedClient({
      baseUrl: relay.url,
      apiKey: relay.apiKey,
      agentToken: agent.token,
      workspaceSlug: relay.workspace.slug,
      channelId,
    });
    assert.equal(result.completion, "\n  return a + b;\n}");
    assert.equal(result.replyAuthor, "agent");
    assert.ok(result.requests >= 1, `the usage read counts the completion: ${result.requests}`);
    const posted = await relay.request(`/api/v1/conversations/channel/${channelId}/messages`);
    const messages = ((await posted.json()) as { data: Api.Message[] }).data;
    assert.ok(messages.some((message) => message.id === result.replyId && message.author.name === "Generated"));
  });
});
