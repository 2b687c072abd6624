import assert from "node:assert/strict";
import { type ServerResponse, createServer, get } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { holdHeaders, releaseHeaders, setOrHold, writeHeadWithHeld } from "./heldHeaders";

/** Serves one request with `answer`, and resolves with the raw header lines (Date elided) and what `answer` returned. */
async function exchange<T>(answer: (res: ServerResponse) => T): Promise<{ lines: string[]; seen: T }> {
  let seen: T | undefined;
  const server = createServer((_req, res) => {
    seen = answer(res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const lines = await new Promise<string[]>((resolve, reject) => {
      get({ port, host: "127.0.0.1", path: "/", agent: false }, (res) => {
        res.resume();
        res.on("end", () => {
          const found: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            if (res.rawHeaders[i] !== "Date") found.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
          resolve(found);
        });
      }).on("error", reject);
    });
    return { lines, seen: seen as T };
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe("held headers", () => {
  it("go out first in the one writeHead, which Node then keeps as given (no header map made)", async () => {
    const { lines, seen } = await exchange((res) => {
      holdHeaders(res);
      setOrHold(res, "X-Request-Id", "r1");
      setOrHold(res, "X-RateLimit-Limit", "5");
      writeHeadWithHeld(res, 200, ["Content-Type", "text/plain", "Connection", "close"]);
      const names = res.getHeaderNames();
      res.end("ok");
      return names;
    });
    assert.deepEqual(lines, [
      "X-Request-Id: r1",
      "X-RateLimit-Limit: 5",
      "Content-Type: text/plain",
      "Connection: close",
      "Transfer-Encoding: chunked",
    ]);
    // Headers set one by one would be in the response's map; given to writeHead alone, they never are.
    assert.deepEqual(seen, []);
  });

  it("are set in their order when released, before whatever the answer sets after", async () => {
    const { lines } = await exchange((res) => {
      holdHeaders(res);
      setOrHold(res, "X-Request-Id", "r2");
      setOrHold(res, "Connection", "close");
      releaseHeaders(res);
      releaseHeaders(res);
      res.setHeader("Retry-After", "1");
      res.statusCode = 503;
      res.end();
    });
    assert.deepEqual(lines, ["X-Request-Id: r2", "Connection: close", "Retry-After: 1", "Content-Length: 0"]);
  });

  it("are set at once on a response that does not hold them", async () => {
    const { lines, seen } = await exchange((res) => {
      setOrHold(res, "X-Request-Id", "r3");
      const names = res.getHeaderNames();
      writeHeadWithHeld(res, 200, ["Content-Type", "text/plain", "Connection", "close"]);
      res.end();
      return names;
    });
    assert.deepEqual(seen, ["x-request-id"]);
    assert.deepEqual(lines, [
      "X-Request-Id: r3",
      "Content-Type: text/plain",
      "Connection: close",
      "Transfer-Encoding: chunked",
    ]);
  });
});
