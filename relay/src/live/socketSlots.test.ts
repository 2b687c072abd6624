import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, type AddressInfo } from "node:net";
import { after, test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { silentLogger } from "../logger";
import { type SocketSlots, createMemorySocketSlots, createRedisSocketSlots } from "./socketSlots";

const REDIS_URL = "redis://127.0.0.1:6379";
const PREFIX = `tab-relay-test:sockets:${randomUUID()}:`;

const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
admin.on("error", () => undefined);
const reachable = await admin.connect().then(
  () => true,
  () => false,
);
const SKIPPED = "Redis not reachable at 127.0.0.1:6379: these tests did not run";
if (!reachable) process.stderr.write(`\n*** ${SKIPPED} ***\n\n`);

const opened: SocketSlots[] = [];
after(async () => {
  await Promise.all(opened.map((slots) => slots.close()));
  if (reachable) {
    const keys = await admin.keys(`${PREFIX}*`);
    if (keys.length > 0) await admin.del(...keys);
  }
  admin.disconnect();
});

/** A relay's places in Redis, connected before it is handed out. */
async function relaySlots(relayId: string, ttlMs = 60_000, url = REDIS_URL): Promise<SocketSlots> {
  const slots = createRedisSocketSlots({
    url,
    logger: silentLogger,
    relayId,
    fallback: createMemorySocketSlots(),
    ttlMs,
    keyPrefix: PREFIX,
  });
  opened.push(slots);
  // Takes fall back to counting alone until the connection is up; a place that shows in Redis says it is.
  const deadline = performance.now() + 3_000;
  while (url === REDIS_URL) {
    const subject = `probe:${randomUUID()}`;
    const probe = await slots.take(subject, 1);
    const inRedis = (await admin.exists(`${PREFIX}${subject}`)) === 1;
    probe?.release();
    if (inRedis) break;
    if (performance.now() > deadline) throw new Error("the slots never reached Redis");
    await sleep(20);
  }
  return slots;
}

function needsRedis(t: TestContext): boolean {
  if (!reachable) t.skip(SKIPPED);
  return reachable;
}

test("two relays share one cap: places taken on either count, and a place given back on one is free on the other", async (t) => {
  if (!needsRedis(t)) return;
  const [one, two] = [await relaySlots("rly_one"), await relaySlots("rly_two")];
  const subject = `live:${randomUUID()}`;
  const first = await one.take(subject, 3);
  assert.ok(await one.take(subject, 3));
  assert.ok(await two.take(subject, 3));
  assert.equal(await two.take(subject, 3), undefined, "the fourth place, on relay 2");
  assert.equal(await one.take(subject, 3), undefined, "the fourth place, on relay 1");
  first?.release();
  first?.release();
  await sleep(50);
  assert.ok(await two.take(subject, 3), "relay 1 gave one back");
  assert.equal(await two.take(subject, 3), undefined, "releasing twice gave back one place, not two");
});

test("at the same moment, 20 takes for 5 places on two relays get exactly 5", async (t) => {
  if (!needsRedis(t)) return;
  const [one, two] = [await relaySlots("rly_a"), await relaySlots("rly_b")];
  const subject = `agent:${randomUUID()}`;
  const taken = await Promise.all(Array.from({ length: 20 }, (_, n) => (n % 2 ? one : two).take(subject, 5)));
  assert.equal(taken.filter(Boolean).length, 5);
});

test("a live relay keeps its places past their lifetime by renewing them", async (t) => {
  if (!needsRedis(t)) return;
  const [one, two] = [await relaySlots("rly_keeps", 300), await relaySlots("rly_other", 300)];
  const subject = `live:${randomUUID()}`;
  assert.ok(await one.take(subject, 1));
  await sleep(1_000);
  assert.equal(await two.take(subject, 1), undefined, "still held a second later, three lifetimes");
});

test("a relay killed while holding places loses them once they lapse, without anyone giving them back", async (t) => {
  if (!needsRedis(t)) return;
  const subject = `live:${randomUUID()}`;
  const module = fileURLToPath(new URL("./socketSlots.ts", import.meta.url));
  // A relay process that takes every place, says so, and is then killed: nothing in it runs again.
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "-e",
      `const { createRedisSocketSlots, createMemorySocketSlots } = await import(${JSON.stringify(module)});
       const slots = createRedisSocketSlots({ url: ${JSON.stringify(REDIS_URL)}, relayId: "rly_doomed", ttlMs: 1000,
         keyPrefix: ${JSON.stringify(PREFIX)}, fallback: createMemorySocketSlots(),
         logger: { debug() {}, info() {}, warn() {}, error() {} } });
       const { Redis } = await import("ioredis");
       const check = new Redis(${JSON.stringify(REDIS_URL)});
       for (let n = 0; ; n++) {
         const probe = await slots.take("probe-" + n, 1);
         if (probe && (await check.exists(${JSON.stringify(PREFIX)} + "probe-" + n))) break;
         await new Promise((r) => setTimeout(r, 20));
       }
       for (let n = 0; n < 2; n++) await slots.take(${JSON.stringify(subject)}, 2);
       console.log("held");
       setInterval(() => {}, 1000);`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  t.after(() => child.kill("SIGKILL"));
  await once(child.stdout, "data");
  const other = await relaySlots("rly_survivor");
  assert.equal(await other.take(subject, 2), undefined, "the doomed relay holds both places");
  child.kill("SIGKILL");
  await once(child, "exit");
  const killedAt = performance.now();
  let slot;
  while (!(slot = await other.take(subject, 2))) {
    assert.ok(performance.now() - killedAt < 5_000, "the dead relay's places never lapsed");
    await sleep(50);
  }
  assert.ok(slot);
});

test("with Redis out of reach, a relay counts its own sockets: the cap holds per relay and nothing throws", async () => {
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const port = (closed.address() as AddressInfo).port;
  closed.close();
  const slots = await relaySlots("rly_alone", 60_000, `redis://127.0.0.1:${port}`);
  const subject = `agent:${randomUUID()}`;
  assert.ok(await slots.take(subject, 2));
  const second = await slots.take(subject, 2);
  assert.ok(second);
  assert.equal(await slots.take(subject, 2), undefined);
  second?.release();
  assert.ok(await slots.take(subject, 2));
});
