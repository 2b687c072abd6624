/**
 * A client of the relay generated from its OpenAPI document alone, as a team writing its own tooling would make one:
 * openapi-typescript turns /api/v1/openapi.json into `schema.d.ts` (test/openapi/client.test.ts generates it; it is
 * not kept in git), and openapi-fetch calls the relay with those types. tsc checks this file against them.
 */
import createClient from "openapi-fetch";
import type { paths } from "./schema";

export interface ClientRun {
  completion: string;
  replyId: string;
  replyAuthor: string;
  requests: number;
}

export async function runGeneratedClient(options: {
  baseUrl: string;
  apiKey: string;
  agentToken: string;
  workspaceSlug: string;
  channelId: string;
}): Promise<ClientRun> {
  const relay = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
  });
  const agent = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.agentToken}` },
  });

  const completion = await relay.POST("/api/v1/tab/chat/completions", {
    body: {
      tab_context: {
        surface: "code",
        workspace_slug: options.workspaceSlug,
        entity_id: "a.js",
        document_type: "plaintext",
        active_text_before_cursor: "function add(a, b) {\n  return a + b;\n}\nfunction add(a, b) {",
      },
    },
  });
  if (completion.error !== undefined) throw new Error(`completion: ${completion.error.error.code}`);
  if (typeof completion.data === "string") throw new Error("completion: a stream, though none was asked for");
  const text = completion.data.choices[0]?.message.content ?? "";

  const reply = await agent.POST("/api/v1/agent-api/conversations/{type}/{id}/messages", {
    params: { path: { type: "channel", id: options.channelId } },
    body: { text: "an answer through the generated client" },
  });
  if (reply.error !== undefined) throw new Error(`reply: ${reply.error.error.code}: ${reply.error.error.message}`);

  const usage = await relay.GET("/api/v1/tab/usage", { params: { query: { group_by: "day" } } });
  if (usage.error !== undefined) throw new Error(`usage: ${usage.error.error.code}`);

  return {
    completion: text,
    replyId: reply.data.data.id,
    replyAuthor: reply.data.data.author.type,
    requests: usage.data.data.totals.requests,
  };
}
