// Stand-in for `tab-relay serve` until the real relay exists: the same routes the e2e test touches, with a
// local engine that continues with what followed the longest earlier match of the text before the cursor.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { RelayUnderTest } from "../relay";

async function readJson(request: IncomingMessage): Promise<unknown> {
  let body = "";
  for await (const chunk of request) body += String(chunk);
  return JSON.parse(body);
}

export function continueFromEarlierMatch(before: string): string {
  for (let length = Math.min(before.length - 1, 200); length >= 6; length--) {
    const tail = before.slice(-length);
    const at = before.lastIndexOf(tail, before.length - length - 1);
    if (at >= 0) {
      const following = before.slice(at + length, before.length - length);
      const blankLine = following.indexOf("\n\n");
      return blankLine >= 0 ? following.slice(0, blankLine) : following;
    }
  }
  return "";
}

export async function startStandInRelay(workspaceSlug: string): Promise<RelayUnderTest> {
  const keyId = `key_${randomUUID()}`;
  const apiKey = `svc_ws_${randomUUID().replace(/-/g, "")}`;
  let revoked = false;
  const server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    void (async () => {
      if (request.url === "/healthz") return send(200, { ok: true });
      if (revoked || request.headers.authorization !== `Bearer ${apiKey}`) {
        return send(401, { error: { code: "INVALID_API_KEY", message: "invalid or revoked API key" } });
      }
      if (request.method === "GET" && request.url === "/api/v1/me") return send(200, { data: { key: { id: keyId } } });
      if (request.method === "DELETE" && request.url === `/api/v1/api-keys/${keyId}`) {
        revoked = true;
        return send(200, { data: { id: keyId, revoked: true } });
      }
      if (request.method === "POST" && request.url === "/api/v1/tab/chat/completions") {
        const body = (await readJson(request)) as { tab_context: { active_text_before_cursor: string } };
        const content = continueFromEarlierMatch(body.tab_context.active_text_before_cursor);
        return send(200, { choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }] });
      }
      return send(404, { error: { code: "NOT_FOUND", message: "no such route" } });
    })().catch((error: unknown) => send(500, { error: { code: "INTERNAL", message: String(error) } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    workspaceSlug,
    apiKey,
    revokeKey: async () => {
      const headers = { authorization: `Bearer ${apiKey}` };
      const me = (await (await fetch(`http://127.0.0.1:${port}/api/v1/me`, { headers })).json()) as { data: { key: { id: string } } };
      const answer = await fetch(`http://127.0.0.1:${port}/api/v1/api-keys/${me.data.key.id}`, { method: "DELETE", headers });
      if (!answer.ok) throw new Error(`revocation answered ${answer.status}`);
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
