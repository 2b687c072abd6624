import { type Agent, request } from "node:http";
import { performance } from "node:perf_hooks";

/** One person's post as the webhook benchmarks time it. */
export interface Post {
  sentAt: number;
  answeredAt: number;
  messageId: string | undefined;
  error: string | undefined;
}

/** Posts message k mentioning `agentName` in a channel over the keep-alive `pool`; never rejects. */
export function postMention(
  pool: Agent,
  relay: { url: string; apiKey: string },
  channelId: string,
  agentName: string,
  k: number,
): Promise<Post> {
  const url = new URL(`${relay.url}/api/v1/conversations/channel/${channelId}/messages`);
  const body = Buffer.from(
    JSON.stringify({ text: `@${agentName} the nightly build ${k} failed on step 3, can you take a look?` }),
  );
  return new Promise((resolve) => {
    const sentAt = performance.now();
    const settle = (messageId: string | undefined, error: string | undefined) =>
      resolve({ sentAt, answeredAt: performance.now(), messageId, error });
    const req = request(
      {
        agent: pool,
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: {
          authorization: `Bearer ${relay.apiKey}`,
          "content-type": "application/json",
          "content-length": String(body.byteLength),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode !== 201) return settle(undefined, `status ${res.statusCode}: ${text.slice(0, 200)}`);
          settle((JSON.parse(text) as { data: { id: string } }).data.id, undefined);
        });
        res.on("error", (error) => settle(undefined, error.message));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
    req.on("error", (error) => settle(undefined, error.message));
    req.end(body);
  });
}
