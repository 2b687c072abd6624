import assert from "node:assert/strict";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { WebhookVerificationError, newSigningSecret, type WebhookEvent } from "@tab-relay/shared";
import { NOW_MS, NOW_S, PING, delivery, messageEvent } from "./fixtures";
import { type WebhookHandler, type WebhookRejection, createWebhookHandler, createWebhookReceiver } from "./receiver";

describe("createWebhookReceiver", () => {
  const secret = newSigningSecret();

  test("returns the verified event and marks a retry with the same webhook-id as a duplicate", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(messageEvent());
    const first = await receiver.receive(await delivery(secret, "msg_a", body), body);
    assert.equal(first.duplicate, false);
    assert.equal(first.webhookId, "msg_a");
    assert.deepEqual(first.event, messageEvent());
    // A retry is re-signed with a fresh attempt timestamp but keeps the webhook-id.
    const retry = await receiver.receive(await delivery(secret, "msg_a", body, NOW_S - 60), body);
    assert.equal(retry.duplicate, true);
    const other = await receiver.receive(await delivery(secret, "msg_b", body), body);
    assert.equal(other.duplicate, false);
  });

  test("rejects a tampered body and does not remember its webhook-id", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_t", body);
    const tampered = body.replace("Acme", "Evil");
    await assert.rejects(
      receiver.receive(headers, tampered),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "no_matching_signature",
    );
    const genuine = await receiver.receive(headers, body);
    assert.equal(genuine.duplicate, false, "a forged request must not suppress the real delivery");
    assert.deepEqual(genuine.event, PING);
  });

  test("rejects a delivery signed with another secret", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    await assert.rejects(
      receiver.receive(await delivery(newSigningSecret(), "msg_x", body), body),
      WebhookVerificationError,
    );
  });

  test("checks timestamps against the injected clock and tolerance", async () => {
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_clock", body);
    const late = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS + 301_000 });
    await assert.rejects(
      late.receive(headers, body),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "timestamp_too_old",
    );
    const lenient = createWebhookReceiver({
      signingSecret: secret,
      now: () => NOW_MS + 301_000,
      toleranceSeconds: 600,
    });
    assert.equal((await lenient.receive(headers, body)).duplicate, false);
  });

  test("forgets the least recently seen webhook-id beyond rememberIds", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS, rememberIds: 2 });
    const body = JSON.stringify(PING);
    const receive = async (id: string) => (await receiver.receive(await delivery(secret, id, body), body)).duplicate;
    assert.equal(await receive("a"), false);
    assert.equal(await receive("b"), false);
    assert.equal(await receive("a"), true, "seeing a again makes b the oldest");
    assert.equal(await receive("c"), false);
    assert.equal(await receive("a"), true);
    assert.equal(await receive("b"), false, "b was evicted");
  });

  test("forget lets a retry through again", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_f", body);
    await receiver.receive(headers, body);
    receiver.forget("msg_f");
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
  });

  test("rememberIds 0 reports nothing as a duplicate", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret, now: () => NOW_MS, rememberIds: 0 });
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_z", body);
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
    assert.equal((await receiver.receive(headers, body)).duplicate, false);
  });

  test("refuses an unusable secret or rememberIds at creation", () => {
    assert.throws(
      () => createWebhookReceiver({ signingSecret: "whsec_short" }),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "invalid_secret",
    );
    assert.throws(() => createWebhookReceiver({ signingSecret: secret, rememberIds: -1 }), RangeError);
  });

  test("uses the system clock when none is injected", async () => {
    const receiver = createWebhookReceiver({ signingSecret: secret });
    const body = JSON.stringify(PING);
    const fresh = await delivery(secret, "msg_now", body, Math.floor(Date.now() / 1000));
    assert.equal((await receiver.receive(fresh, body)).duplicate, false);
    const stale = await delivery(secret, "msg_old", body, NOW_S - 86_400);
    await assert.rejects(receiver.receive(stale, body), WebhookVerificationError);
  });
});

/** A gate a test opens by hand: onEvent waits on it, so a test can see the answer arrive before the work ends. */
function gate(): { wait: Promise<void>; open(): void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

describe("createWebhookHandler over node:http", () => {
  const secret = newSigningSecret();
  let server: Server;
  let url: string;
  let handler: WebhookHandler;
  const handled: WebhookEvent[] = [];
  const rejected: WebhookRejection[] = [];
  const failures: unknown[] = [];
  let work = gate();
  /** What the server does before the handler: nothing, or read the body as a JSON parser mounted first would. */
  let before_: (req: IncomingMessage) => Promise<void> = async () => {};

  before(async () => {
    handler = createWebhookHandler({
      signingSecret: secret,
      now: () => NOW_MS,
      maxBodyBytes: 4096,
      async onEvent(event) {
        await work.wait;
        if (event.type === "ping" && event.id === "evt_fail") throw new Error("the agent's own bug");
        handled.push(event);
      },
      onError: (error) => failures.push(error),
      onRejected: (reason) => rejected.push(reason),
    });
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      void before_(req).then(() => handler.node(req, res));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function post(id: string, body: string, headers?: Record<string, string>): Promise<Response> {
    return fetch(url, { method: "POST", headers: headers ?? (await delivery(secret, id, body)), body });
  }

  test("answers 204 before onEvent finishes, then runs it once; a repeat of the webhook-id gets 200 and no second run", async () => {
    work = gate();
    handled.length = 0;
    const body = JSON.stringify(messageEvent());
    const first = await post("msg_h1", body);
    assert.equal(first.status, 204);
    assert.deepEqual(handled, [], "the work waits for the test, and the answer did not");
    work.open();
    await handler.idle();
    assert.deepEqual(handled, [messageEvent()]);
    const repeat = await post("msg_h1", body);
    assert.equal(repeat.status, 200);
    assert.deepEqual(await repeat.json(), { duplicate: true });
    await handler.idle();
    assert.equal(handled.length, 1);
  });

  test("refuses a bad signature with 400 naming the reason, and runs nothing", async () => {
    work.open();
    handled.length = 0;
    rejected.length = 0;
    const body = JSON.stringify(PING);
    const headers = await delivery(secret, "msg_h2", body);
    const tampered = await post("msg_h2", body.replace("Acme", "Evil"), headers);
    assert.equal(tampered.status, 400);
    assert.deepEqual(((await tampered.json()) as { error: { code: string } }).error.code, "no_matching_signature");
    const stale = await post("msg_h3", body, await delivery(secret, "msg_h3", body, NOW_S - 301));
    assert.equal(stale.status, 400);
    await stale.arrayBuffer();
    const unsigned = await fetch(url, { method: "POST", body });
    assert.equal(unsigned.status, 400);
    await unsigned.arrayBuffer();
    await handler.idle();
    assert.deepEqual(handled, []);
    assert.deepEqual(rejected, ["no_matching_signature", "timestamp_too_old", "missing_headers"]);
    // The forged request did not use up the id: the real delivery goes through.
    assert.equal((await post("msg_h2", body)).status, 204);
  });

  test("answers 405 with Allow: POST to other methods", async () => {
    const response = await fetch(url);
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST");
    await response.arrayBuffer();
  });

  test("refuses a body over maxBodyBytes with 413, declared or streamed", async () => {
    const big = JSON.stringify({ ...PING, padding: "x".repeat(5000) });
    const declared = await post("msg_h4", big);
    assert.equal(declared.status, 413);
    await declared.arrayBuffer();
    const headers = await delivery(secret, "msg_h5", big);
    const streamed = await fetch(url, {
      method: "POST",
      headers,
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    assert.equal(streamed.status, 413);
    await streamed.arrayBuffer();
  });

  test("says so, instead of failing every signature, when a body parser read the body first", async () => {
    before_ = async (req) => {
      for await (const chunk of req) void chunk;
    };
    try {
      const response = await post("msg_h6", JSON.stringify(PING));
      assert.equal(response.status, 500);
      const answer = (await response.json()) as { error: { code: string; message: string } };
      assert.equal(answer.error.code, "body_already_read");
      assert.match(answer.error.message, /before express\.json\(\)/);
    } finally {
      before_ = async () => {};
    }
  });

  test("reports an onEvent that throws to onError; the delivery was answered 204 all the same", async () => {
    work.open();
    failures.length = 0;
    const response = await post("msg_h7", JSON.stringify({ ...PING, id: "evt_fail" }));
    assert.equal(response.status, 204);
    await handler.idle();
    assert.equal(failures.length, 1);
    assert.match(String(failures[0]), /the agent's own bug/);
  });
});

describe("createWebhookHandler over the Fetch API", () => {
  const secret = newSigningSecret();

  test("answers a Request with a Response, hands the work to waitUntil, and idle() waits for it", async () => {
    const handled: string[] = [];
    const kept: Promise<unknown>[] = [];
    const work = gate();
    const handler = createWebhookHandler({
      signingSecret: secret,
      now: () => NOW_MS,
      async onEvent(event, { webhookId }) {
        await work.wait;
        handled.push(`${event.type} ${webhookId}`);
      },
      waitUntil: (promise) => kept.push(promise),
    });
    const body = JSON.stringify(PING);
    const request = new Request("https://agent.example/webhook", {
      method: "POST",
      headers: await delivery(secret, "msg_f1", body),
      body,
    });
    const response = await handler.fetch(request);
    assert.equal(response.status, 204);
    assert.equal(kept.length, 1);
    assert.deepEqual(handled, []);
    work.open();
    await handler.idle();
    assert.deepEqual(handled, ["ping msg_f1"]);

    const repeat = await handler.fetch(
      new Request("https://agent.example/webhook", {
        method: "POST",
        headers: await delivery(secret, "msg_f1", body),
        body,
      }),
    );
    assert.equal(repeat.status, 200);
    const wrongSecret = await handler.fetch(
      new Request("https://agent.example/webhook", {
        method: "POST",
        headers: await delivery(newSigningSecret(), "msg_f2", body),
        body,
      }),
    );
    assert.equal(wrongSecret.status, 400);
    assert.equal((await handler.fetch(new Request("https://agent.example/webhook"))).status, 405);
  });

  test("refuses a bad maxBodyBytes or secret at creation", () => {
    assert.throws(() => createWebhookHandler({ signingSecret: secret, maxBodyBytes: 0, onEvent() {} }), RangeError);
    assert.throws(
      () => createWebhookHandler({ signingSecret: "whsec_x", onEvent() {} }),
      (error: unknown) => error instanceof WebhookVerificationError && error.reason === "invalid_secret",
    );
  });
});
