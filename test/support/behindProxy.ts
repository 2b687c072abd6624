// The checks of a shipped reverse-proxy recipe, run by test/relay/nginx.test.ts and test/relay/caddy.test.ts: a relay
// in this process with the settings the recipe asks for, the proxy (Debian's own binary) in front of it over TLS
// with a certificate made for the test, and clients that reach it as browsers, editors and agents do.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Webhook } from "standardwebhooks";
import { type Clock, systemClock } from "../../relay/src/clock";
import { createJsonLogger } from "../../relay/src/logger";
import { completionBody, startTestRelay, type TestRelay } from "./relayHarness";
import {
  ProxyClient,
  directStream,
  http2Session,
  http2Stream,
  plainHttp,
  type StreamTiming,
  type TlsAnswer,
} from "./proxyClient";
import {
  SITE,
  type Certificate,
  type ProxyKind,
  type ProxyProcess,
  ensureProxy,
  freePort,
  makeCertificate,
  startProxy,
} from "./reverseProxy";
import { type UpstreamStandIn, startUpstreamStandIn } from "./upstreamStandIn";

const COMPLETIONS = "/api/v1/tab/chat/completions";
/** The upstream's pause between two chunks of the slow stream: long enough that a buffering proxy shows. */
const GAP_MS = 250;
const FRAGMENTS = ["\n  return", " a", " +", " b;", "\n}"];
/** Sign-ins one address may try per minute in these tests (the `writes` limit). */
const WRITES = 8;
const WINDOW_MS = 60_000;

interface LoggedRequest {
  msg: string;
  method: string;
  route: string;
  status: number;
  client: string;
}

/** The relay's time, set to 5 s into a rate-limit window at start, so the file's requests all fall in one window. */
function windowAlignedClock(): Clock {
  const offset = (5_000 - (Date.now() % WINDOW_MS) + WINDOW_MS) % WINDOW_MS;
  return { ...systemClock, now: () => Date.now() + offset };
}

/** The relay, its upstream stand-in and the proxy in front of it, on fresh ports. */
interface Stack {
  relay: TestRelay;
  proxy: ProxyProcess;
  origin: string;
  logLines: string[];
}

async function startStack(kind: ProxyKind, certificate: Certificate, upstream: UpstreamStandIn): Promise<Stack> {
  // A port found free can be taken before the proxy binds it; then everything starts again on new ports.
  for (let attempt = 1; ; attempt++) {
    const ports = { http: await freePort(), https: await freePort() };
    const origin = `https://${SITE}:${ports.https}`;
    const logLines: string[] = [];
    const clock = windowAlignedClock();
    const relay = await startTestRelay({
      clock,
      logger: createJsonLogger({ level: "info", write: (line) => logLines.push(line), now: () => clock.now() }),
      env: {
        TAB_RELAY_PUBLIC_URL: origin,
        TAB_RELAY_TRUST_PROXY: "127.0.0.1",
        TAB_RELAY_UPSTREAM_URL: upstream.url,
        TAB_RELAY_UPSTREAM_MODEL: "stand-in-coder",
        TAB_RELAY_CACHE_ENTRIES: "0",
        TAB_RELAY_RATE_LIMITS: `writes=${WRITES}`,
      },
    });
    try {
      const proxy = await startProxy(kind, { ports, relayPort: Number(new URL(relay.url).port), certificate });
      return { relay, proxy, origin, logLines };
    } catch (error) {
      await relay.close();
      if (attempt >= 3 || !/in use/i.test(String(error))) throw error;
    }
  }
}

function requestLines(stack: Stack): LoggedRequest[] {
  return stack.logLines.map((line) => JSON.parse(line) as LoggedRequest).filter((line) => line.msg === "request");
}

function data<T>(answer: TlsAnswer): T {
  return (JSON.parse(answer.body) as { data: T }).data;
}

/** The attributes of a Set-Cookie header, by lower-cased name ("" for flags). */
function cookieAttributes(setCookie: string): Map<string, string> {
  const attributes = new Map<string, string>();
  for (const part of setCookie.split(";").slice(1)) {
    const [name = "", value = ""] = part.trim().split("=");
    attributes.set(name.toLowerCase(), value);
  }
  return attributes;
}

/** Every gap between two chunks with text, in ms. */
function gaps(timing: StreamTiming): number[] {
  return timing.contentAtMs.slice(1).map((at, i) => at - (timing.contentAtMs[i] as number));
}

export function describeBehindProxy(kind: ProxyKind, recipe: string, label: string): void {
  const prerequisites = ensureProxy(kind);
  const skip = !prerequisites.ready && !process.env.CI ? `SKIPPED, NOT TESTED: ${prerequisites.reason}` : false;
  if (skip) console.error(`\n${"!".repeat(100)}\n[${kind}] ${skip}\n${"!".repeat(100)}\n`);

  describe(`the relay behind ${label} (${recipe})`, { skip, timeout: 60_000 }, () => {
    let dir: string;
    let certificate: Certificate;
    let upstream: UpstreamStandIn;
    let stack: Stack;
    let owner: ProxyClient;
    const auth = () => ({ authorization: `Bearer ${stack.relay.apiKey}` });

    before(async () => {
      if (!prerequisites.ready) throw new Error(`cannot run the ${kind} test: ${prerequisites.reason}`);
      dir = mkdtempSync(join(tmpdir(), `tab-relay-${kind}-cert-`));
      certificate = makeCertificate(dir);
      upstream = await startUpstreamStandIn({ model: "stand-in-coder" });
      stack = await startStack(kind, certificate, upstream);
      owner = new ProxyClient(stack.origin, certificate.pem);
    });

    after(async () => {
      owner?.close();
      await stack?.proxy.stop();
      await stack?.relay.close();
      await upstream?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("terminates TLS with the site's certificate and hands the request to the relay; plain http is sent to https", async () => {
      const health = await owner.request("/healthz");
      assert.equal(health.status, 200, health.body);
      assert.match(health.tls.protocol ?? "", /^TLSv1\.[23]$/);
      assert.equal(health.tls.subject, SITE);
      assert.match(String(health.headers["x-request-id"]), /\S/, "the relay answered");
      assert.equal(health.headers["strict-transport-security"], "max-age=31536000");

      const plain = await plainHttp(stack.proxy.ports.http, "/api/v1/me?x=1");
      assert.ok([301, 308].includes(plain.status), `plain http answered ${plain.status}`);
      assert.match(
        String(plain.headers.location),
        new RegExp(`^https://${SITE.replace(/\./g, "\\.")}(:${stack.proxy.ports.https})?/api/v1/me\\?x=1$`),
      );
      assert.equal(plain.headers["x-request-id"], undefined, "the proxy answered, not the relay");
    });

    test("/metrics is not served through the proxy, however its path is spelled", async () => {
      for (const path of [
        "/metrics",
        "/METRICS",
        "/metrics/",
        "/Metrics?x=1",
        "/%6detrics",
        "//metrics",
        "/./metrics",
      ]) {
        const answer = await owner.request(path);
        assert.notEqual(answer.status, 200, `${path} answered 200`);
        assert.doesNotMatch(answer.body, /tab_relay_/, `${path} carried metrics`);
      }
      // The relay itself still answers a scrape on this machine.
      assert.equal((await fetch(`${stack.relay.url}/metrics`)).status, 200);
    });

    test("a streamed completion's chunks arrive as the model server sends them, not when the stream ends (HTTP/1.1 and HTTP/2)", async () => {
      const body = completionBody({}, { stream: true });
      // The first completion of a process loads and compiles its path; that time is not the proxy's.
      upstream.enqueue({ kind: "reply", text: FRAGMENTS });
      assert.equal((await directStream(`${stack.relay.url}${COMPLETIONS}`, auth(), body)).status, 200);
      const slow = { kind: "reply", text: FRAGMENTS, chunkDelayMs: GAP_MS } as const;
      upstream.enqueue(slow);
      const direct = await directStream(`${stack.relay.url}${COMPLETIONS}`, auth(), body);
      upstream.enqueue(slow);
      const proxied = await owner.stream(COMPLETIONS, auth(), body);
      upstream.enqueue(slow);
      const session = await http2Session(stack.origin, certificate.pem);
      let overHttp2: StreamTiming;
      try {
        overHttp2 = await http2Stream(session, COMPLETIONS, auth(), body);
      } finally {
        session.close();
      }
      for (const [how, timing] of [
        ["directly", direct],
        ["through the proxy", proxied],
        ["through the proxy over HTTP/2", overHttp2],
      ] as const) {
        assert.equal(timing.status, 200, how);
        assert.equal(timing.text, FRAGMENTS.join(""), how);
        assert.equal(timing.data.at(-1), "[DONE]", how);
        assert.equal(timing.contentAtMs.length, FRAGMENTS.length, `${how}: one chunk per fragment`);
        // A proxy that buffers lets the chunks go together: every gap near 0 and the first text at the end. A busy
        // machine can only make a chunk late (timers never fire early), which shortens one gap and lengthens
        // another, so the median gap and the first text's lead hold with room for that.
        const sorted = [...gaps(timing)].sort((a, b) => a - b);
        const median = ((sorted[1] as number) + (sorted[2] as number)) / 2;
        assert.ok(
          median >= 0.6 * GAP_MS,
          `${how}: chunks ${gaps(timing).map(Math.round).join(", ")} ms apart; the upstream paused ${GAP_MS} ms between them`,
        );
        const first = timing.contentAtMs[0] as number;
        assert.ok(
          timing.endMs - first >= 0.6 * GAP_MS * (FRAGMENTS.length - 1),
          `${how}: the first text came ${Math.round(first)} ms in, the end ${Math.round(timing.endMs)} ms`,
        );
      }
    });

    test("under the https public URL, signing in through the proxy sets __Host-tab_session with Secure, and only that cookie is read", async () => {
      const signIn = await owner.request("/api/v1/sessions", { method: "POST", json: { api_key: stack.relay.apiKey } });
      assert.equal(signIn.status, 201, signIn.body);
      const [setCookie = ""] = signIn.headers["set-cookie"] ?? [];
      assert.match(setCookie, /^__Host-tab_session=[A-Za-z0-9_-]+;/);
      const attributes = cookieAttributes(setCookie);
      assert.ok(attributes.has("secure"), setCookie);
      assert.ok(attributes.has("httponly"), setCookie);
      assert.equal(attributes.get("path"), "/");
      assert.equal(attributes.get("samesite"), "Strict");
      assert.equal(attributes.has("domain"), false, "a __Host- cookie has no Domain");
      const cookie = setCookie.split(";")[0] as string;
      const current = await owner.request("/api/v1/sessions/current", { headers: { cookie } });
      assert.equal(current.status, 200, current.body);
      const unprefixed = cookie.replace(/^__Host-/, "");
      assert.equal((await owner.request("/api/v1/sessions/current", { headers: { cookie: unprefixed } })).status, 401);
    });

    test("the console's live socket opens through the proxy with the session cookie and a page of the site's origin, and carries a new message", async () => {
      const signIn = await owner.request("/api/v1/sessions", { method: "POST", json: { api_key: stack.relay.apiKey } });
      assert.equal(signIn.status, 201, signIn.body);
      const cookie = (signIn.headers["set-cookie"]?.[0] ?? "").split(";")[0] as string;
      const live = await owner.socket("/api/v1/live", { cookie, origin: stack.origin });
      try {
        assert.equal(live.hello.type, "hello");
        const channel = data<{ id: string }>(
          await owner.request("/api/v1/channels", {
            method: "POST",
            headers: auth(),
            json: { name: "through-the-proxy", visibility: "public" },
          }),
        );
        const posted = await owner.request(`/api/v1/conversations/channel/${channel.id}/messages`, {
          method: "POST",
          headers: auth(),
          json: { text: "hello over wss" },
        });
        assert.equal(posted.status, 201, posted.body);
        const id = data<{ id: string }>(posted).id;
        const frame = await live.frame(
          (f) => f.type === "message.created" && (f.message as { id?: string } | undefined)?.id === id,
        );
        assert.equal((frame.message as { text: string }).text, "hello over wss");
      } finally {
        live.ws.close();
      }
      // The relay compares the page's Origin with the Host it got: only a proxy that forwards the browser's Host
      // (port included) lets the page above in, and a page elsewhere is still kept out.
      const foreign = await owner.refusedSocket("/api/v1/live", { cookie, origin: "https://elsewhere.example" });
      assert.equal(foreign.status, 403, foreign.body);
    });

    test("a Socket Mode agent connects through the proxy, receives an event signed for it and acknowledges it", async () => {
      const created = await owner.request("/api/v1/agents", {
        method: "POST",
        headers: auth(),
        json: { name: "Sock" },
      });
      assert.equal(created.status, 201, created.body);
      const agent = data<{ agent: { id: string }; token: string; signing_secret: string }>(created);
      const socket = await owner.socket("/api/v1/agent-api/socket", { authorization: `Bearer ${agent.token}` });
      try {
        assert.equal(socket.hello.type, "hello");
        assert.equal(socket.hello.agent_id, agent.agent.id);
        const channel = data<{ id: string }>(
          await owner.request("/api/v1/channels", {
            method: "POST",
            headers: auth(),
            json: { name: "agent-over-wss", visibility: "public" },
          }),
        );
        const posted = await owner.request(`/api/v1/conversations/channel/${channel.id}/messages`, {
          method: "POST",
          headers: auth(),
          json: { text: "@Sock are you behind the proxy too?" },
        });
        assert.equal(posted.status, 201, posted.body);
        const envelope = (await socket.frame((f) => f.type === "event")) as {
          envelope_id: string;
          headers: Record<string, string>;
          body: string;
        };
        const event = new Webhook(agent.signing_secret).verify(envelope.body, envelope.headers) as {
          message: { id: string };
        };
        assert.equal(event.message.id, data<{ id: string }>(posted).id);
        socket.ws.send(JSON.stringify({ type: "ack", envelope_id: envelope.envelope_id }));
        const deadline = performance.now() + 5_000;
        for (;;) {
          const log = data<{ id: string; status: string; attempts: { url: string; outcome: string }[] }[]>(
            await owner.request(`/api/v1/agents/${agent.agent.id}/deliveries`, { headers: auth() }),
          );
          const delivery = log.find((entry) => entry.id === envelope.envelope_id);
          if (delivery?.status === "delivered") {
            assert.deepEqual(
              delivery.attempts.map((a) => [a.url, a.outcome]),
              [["socket", "success"]],
            );
            break;
          }
          assert.ok(
            performance.now() < deadline,
            `the delivery is still ${delivery?.status ?? "missing"} 5 s after the ack`,
          );
          await sleep(50);
        }
      } finally {
        socket.ws.close();
      }
    });

    test("with TAB_RELAY_TRUST_PROXY=127.0.0.1 each client behind the proxy has its own rate limit and is logged by its own address, whatever X-Forwarded-For it sends", async () => {
      // Two machines, as far as the proxy can tell: every 127.x.y.z is this host on Linux.
      const guesser = new ProxyClient(stack.origin, certificate.pem, "127.0.0.2");
      const colleague = new ProxyClient(stack.origin, certificate.pem, "127.0.0.3");
      try {
        const signIn = (client: ProxyClient, apiKey: string, forwarded: string) =>
          client.request("/api/v1/sessions", {
            method: "POST",
            json: { api_key: apiKey },
            headers: { "x-forwarded-for": forwarded },
          });
        const before = requestLines(stack).length;
        // The guesser names a new made-up address each time; none of them is believed.
        for (let i = 1; i <= WRITES; i++)
          assert.equal((await signIn(guesser, "svc_ws_guessing", `203.0.113.${i}`)).status, 401);
        const stopped = await signIn(guesser, "svc_ws_guessing", "203.0.113.99");
        assert.equal(stopped.status, 429, "the guesser is stopped after its own budget");
        // The colleague even claims one of the guesser's made-up addresses, and is counted as itself.
        const colleagueIn = await signIn(colleague, stack.relay.apiKey, "203.0.113.1");
        assert.equal(colleagueIn.status, 201, colleagueIn.body);
        assert.equal(
          colleagueIn.headers["x-ratelimit-remaining"],
          String(WRITES - 1),
          "the colleague's first attempt in its own bucket",
        );

        const expected = WRITES + 2;
        const deadline = performance.now() + 2_000;
        while (requestLines(stack).length < before + expected && performance.now() < deadline) await sleep(10);
        const logged = requestLines(stack)
          .slice(before)
          .map((line) => [line.status, line.client]);
        assert.deepEqual(logged, [
          ...Array.from({ length: WRITES }, () => [401, "127.0.0.2"]),
          [429, "127.0.0.2"],
          [201, "127.0.0.3"],
        ]);
      } finally {
        guesser.close();
        colleague.close();
      }
    });

    const bodyLimits =
      kind === "nginx"
        ? "request bodies: under the relay's limit they pass, over it the relay answers 413 in its envelope, and over 1 MiB nginx refuses them"
        : "request bodies: under the relay's limit they pass, and over it (even over 1 MiB) the relay answers 413 in its envelope";
    test(bodyLimits, async () => {
      // Streamed, so that no usage is counted: the tokenizer's first start would only add seconds here.
      const sized = (bytes: number) => {
        const base = JSON.stringify({ ...completionBody({}, { stream: true }), padding: "" });
        return JSON.stringify({ ...completionBody({}, { stream: true }), padding: "x".repeat(bytes - base.length) });
      };
      const send = (bytes: number) => {
        const body = sized(bytes);
        assert.equal(Buffer.byteLength(body), bytes);
        return owner.request(COMPLETIONS, {
          method: "POST",
          headers: { ...auth(), "content-type": "application/json" },
          body,
        });
      };
      upstream.enqueue({ kind: "reply", text: "  return a + b;" });
      const fits = await send(500 * 1024);
      assert.equal(fits.status, 200, fits.body.slice(0, 300));
      assert.match(fits.body, /data: \[DONE\]/);

      const fromRelay = (answer: TlsAnswer) => {
        assert.equal(answer.status, 413, answer.body.slice(0, 300));
        assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, "PAYLOAD_TOO_LARGE");
        assert.match(String(answer.headers["x-request-id"]), /\S/, "the relay's own answer");
      };
      fromRelay(await send(600 * 1024));

      const huge = await send(1536 * 1024);
      if (kind === "caddy") return fromRelay(huge);
      assert.equal(huge.status, 413, huge.body.slice(0, 300));
      assert.equal(huge.headers["x-request-id"], undefined, "nginx's answer: the body never reached the relay");
    });
  });
}
