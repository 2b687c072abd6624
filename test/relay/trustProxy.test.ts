import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { after, describe, test } from "node:test";
import { createJsonLogger } from "../../relay/src/logger";
import { fakeClock, startTestRelay, type TestRelay } from "../support/relayHarness";

// 20 s into a window, so a burst of requests never straddles a boundary.
const NOW = Date.UTC(2026, 10, 21, 12, 0, 20);

interface LoggedRequest {
  msg: string;
  route: string;
  status: number;
  client: string;
}

/** A relay whose log lines are kept, limited to 5 reads a minute so buckets show in `X-RateLimit-Remaining`. */
async function relayWith(trustProxy: string | undefined, env: Record<string, string> = {}) {
  const lines: string[] = [];
  const written = new EventEmitter();
  const write = (line: string) => {
    lines.push(line);
    written.emit("line");
  };
  const relay = await startTestRelay({
    clock: fakeClock(NOW),
    logger: createJsonLogger({ level: "info", write, now: () => NOW }),
    env: {
      TAB_RELAY_RATE_LIMITS: "reads=5,agent_reads=5",
      ...(trustProxy === undefined ? {} : { TAB_RELAY_TRUST_PROXY: trustProxy }),
      ...env,
    },
  });
  const requests = () =>
    lines.map((line) => JSON.parse(line) as LoggedRequest).filter((line) => line.msg === "request");
  return { relay, requests, written };
}

/** An unauthenticated main-API read from a client whose proxies sent `forwarded`; answers the bucket's remaining count. */
async function remainingAfter(relay: TestRelay, forwarded: string | undefined, path = "/api/v1/me"): Promise<number> {
  const response = await relay.request(path, {
    key: null,
    headers: forwarded === undefined ? {} : { "X-Forwarded-For": forwarded },
  });
  assert.equal(response.status, 401);
  return Number(response.headers.get("x-ratelimit-remaining"));
}

/**
 * The log writes a request's line when its response closes, which can be a moment after the client has read it: the
 * clients of the first `count` request lines, once they are written (at most a second later).
 */
async function loggedClients(requests: () => LoggedRequest[], count: number, written: EventEmitter): Promise<string[]> {
  const deadline = AbortSignal.timeout(1000);
  while (requests().length < count) await once(written, "line", { signal: deadline });
  return requests().map((line) => line.client);
}

describe("client addresses behind proxies (TAB_RELAY_TRUST_PROXY)", () => {
  const relays: TestRelay[] = [];
  after(() => Promise.all(relays.map((relay) => relay.close())));

  test("trusting no proxy (the default), X-Forwarded-For is ignored: made-up headers share the socket's bucket", async () => {
    const { relay, requests, written } = await relayWith(undefined);
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.1.1.1"), 4);
    assert.equal(await remainingAfter(relay, "2.2.2.2"), 3);
    assert.equal(await remainingAfter(relay, undefined), 2);
    assert.deepEqual(await loggedClients(requests, 3, written), ["127.0.0.1", "127.0.0.1", "127.0.0.1"]);
  });

  test("false is the same as unset", async () => {
    const { relay } = await relayWith("false");
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.1.1.1"), 4);
    assert.equal(await remainingAfter(relay, "2.2.2.2"), 3);
  });

  test("with one trusted hop, each forwarded client has its own bucket, and only the entry the proxy appended counts", async () => {
    const { relay, requests, written } = await relayWith("1");
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.2.3.4"), 4);
    assert.equal(await remainingAfter(relay, "5.6.7.8"), 4, "another client is counted apart");
    // A client sent `X-Forwarded-For: 6.6.6.6`; its proxy appended the address it saw.
    assert.equal(await remainingAfter(relay, "6.6.6.6, 1.2.3.4"), 3, "counted as 1.2.3.4, not as the made-up 6.6.6.6");
    assert.equal(await remainingAfter(relay, "6.6.6.6"), 4, "6.6.6.6 itself was never charged");
    assert.equal(
      await remainingAfter(relay, undefined),
      4,
      "a request without the header counts as the socket's address",
    );
    assert.deepEqual(await loggedClients(requests, 5, written), [
      "1.2.3.4",
      "5.6.7.8",
      "1.2.3.4",
      "6.6.6.6",
      "127.0.0.1",
    ]);
  });

  test("a list of proxy addresses and CIDR ranges that holds the peer is believed the same way", async () => {
    const { relay, requests, written } = await relayWith("10.0.0.0/8, 127.0.0.1/32, fd00::/8");
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.2.3.4"), 4);
    assert.equal(await remainingAfter(relay, "5.6.7.8"), 4);
    assert.equal(await remainingAfter(relay, "6.6.6.6, 1.2.3.4"), 3);
    // A chain through two trusted proxies (10.1.2.3 forwarded to the one on 127.0.0.1) names the client before both.
    assert.equal(await remainingAfter(relay, "6.6.6.6, 1.2.3.4, 10.1.2.3"), 2);
    assert.deepEqual(await loggedClients(requests, 4, written), ["1.2.3.4", "5.6.7.8", "1.2.3.4", "1.2.3.4"]);
  });

  test("a list that does not hold the peer leaves the header unread", async () => {
    const { relay, requests, written } = await relayWith("10.0.0.0/8, fd00::/8");
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.2.3.4"), 4);
    assert.equal(await remainingAfter(relay, "5.6.7.8"), 3);
    assert.deepEqual(await loggedClients(requests, 2, written), ["127.0.0.1", "127.0.0.1"]);
  });

  test("unauthenticated Agent API requests are counted per forwarded client too", async () => {
    const { relay } = await relayWith("1");
    relays.push(relay);
    assert.equal(await remainingAfter(relay, "1.2.3.4", "/api/v1/agent-api/me"), 4);
    assert.equal(await remainingAfter(relay, "5.6.7.8", "/api/v1/agent-api/me"), 4);
    assert.equal(await remainingAfter(relay, "6.6.6.6, 1.2.3.4", "/api/v1/agent-api/me"), 3);
  });

  test("60 bad sign-ins from one forwarded address do not lock out another", async () => {
    const { relay } = await relayWith("1", { TAB_RELAY_RATE_LIMITS: "writes=60" });
    relays.push(relay);
    const signIn = (forwarded: string, apiKey: string) =>
      relay.request("/api/v1/sessions", {
        method: "POST",
        key: null,
        json: { api_key: apiKey },
        headers: { "X-Forwarded-For": forwarded },
      });
    for (let i = 0; i < 60; i++) assert.equal((await signIn("203.0.113.7", "svc_ws_guessing")).status, 401);
    assert.equal((await signIn("203.0.113.7", "svc_ws_guessing")).status, 429, "the guesser is stopped");
    const colleague = await signIn("198.51.100.2", relay.apiKey);
    assert.equal(colleague.status, 201, await colleague.text());
    assert.equal((await signIn("198.51.100.2", "svc_ws_typo")).status, 401, "and their own typo is a 401, not a 429");
  });

  test("IPv6: a proxy on ::1 named in the list forwards IPv6 clients into a bucket per /64, and logs each address", async () => {
    const { relay, requests, written } = await relayWith("::1", { TAB_RELAY_HOST: "::1" });
    relays.push(relay);
    assert.match(relay.url, /^http:\/\/\[::1\]:/);
    assert.equal(await remainingAfter(relay, "2001:db8::1"), 4);
    assert.equal(await remainingAfter(relay, "2001:db8:0:1::2"), 4, "another /64, its own bucket");
    // One subscriber's /64 is one bucket, whichever of its addresses it uses (issue 19: per /64, not per address).
    assert.equal(await remainingAfter(relay, "2001:db8::dead, 2001:db8::2"), 3);
    assert.deepEqual(await loggedClients(requests, 3, written), ["2001:db8::1", "2001:db8:0:1::2", "2001:db8::2"]);
  });
});
