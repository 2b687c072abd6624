// The built package in a JavaScript realm that has only what every WebCrypto runtime (Deno, Bun, workers, browsers)
// has: no require, no process, no Buffer, no Node modules. Needs `npm run build` (npm test builds first).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

const DIST = fileURLToPath(new URL("../dist/", import.meta.url));

// The official Standard Webhooks test vector (standard-webhooks libraries/javascript/src/webhook.test.ts).
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP = 1614265330;
const PAYLOAD = '{"test": 2432232314}';
const SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

function built(file: string): string {
  const path = `${DIST}${file}`;
  assert.ok(existsSync(path), `${path} is missing: run npm run build`);
  return readFileSync(path, "utf8");
}

test("the ES module imports nothing and the CommonJS build requires nothing", () => {
  assert.doesNotMatch(built("index.js"), /^\s*import\b|\bimport\(|\brequire\(/m);
  assert.doesNotMatch(built("index.cjs"), /\brequire\(/);
});

test("the CommonJS build verifies the Standard Webhooks vector and answers a Request in a realm without Node", async () => {
  const module = { exports: {} as Record<string, unknown> };
  const realm = vm.createContext({
    module,
    exports: module.exports,
    crypto: globalThis.crypto,
    TextEncoder,
    TextDecoder,
    URL,
    URLSearchParams,
    Request,
    Response,
    Headers,
    setTimeout,
    clearTimeout,
  });
  vm.runInContext(built("index.cjs"), realm);
  assert.equal(
    vm.runInContext("typeof process + typeof Buffer + typeof require", realm),
    "undefinedundefinedundefined",
  );
  const agent = module.exports as {
    verifyWebhook(secret: string, headers: object, body: string, options: object): Promise<unknown>;
    signWebhook(secret: string, id: string, timestamp: number, body: string): Promise<string>;
    createWebhookHandler(options: object): { fetch(request: Request): Promise<Response>; idle(): Promise<void> };
  };
  assert.equal(await agent.signWebhook(SECRET, ID, TIMESTAMP, PAYLOAD), SIGNATURE);
  const headers = { "webhook-id": ID, "webhook-timestamp": String(TIMESTAMP), "webhook-signature": SIGNATURE };
  // Objects made in the other realm have its prototypes, so they are compared as JSON.
  const verified = await agent.verifyWebhook(SECRET, headers, PAYLOAD, { nowSeconds: TIMESTAMP });
  assert.equal(JSON.stringify(verified), '{"test":2432232314}');

  const handled: unknown[] = [];
  const handler = agent.createWebhookHandler({
    signingSecret: SECRET,
    now: () => TIMESTAMP * 1000,
    onEvent: (event: unknown) => void handled.push(event),
  });
  const answer = await handler.fetch(new Request("https://agent.example/", { method: "POST", headers, body: PAYLOAD }));
  assert.equal(answer.status, 204);
  await handler.idle();
  assert.equal(JSON.stringify(handled), '[{"test":2432232314}]');
});
