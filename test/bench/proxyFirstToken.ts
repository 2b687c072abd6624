/**
 * First-token time of a streamed completion straight from the relay and through the shipped recipes
 * (docs/deploy/nginx.conf with Debian's nginx, docs/deploy/Caddyfile with Debian's Caddy), over TLS with a
 * self-signed certificate. The relay and the upstream stand-in each run in their own process; requests go one at a
 * time, interleaved between the paths so that a change in the machine's load hits them alike.
 * Usage: `npm run build -w relay && node --import tsx test/bench/proxyFirstToken.ts [--streams 50]`.
 * Prints a Markdown table and writes test-output/bench/proxy.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent as HttpAgent } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { completionBody } from "../support/relayHarness";
import { ProxyClient, directStream, type StreamTiming } from "../support/proxyClient";
import {
  type ProxyKind,
  type ProxyProcess,
  SITE,
  ensureProxy,
  freePort,
  makeCertificate,
  startProxy,
} from "../support/reverseProxy";
import { killAllSync } from "./processes";
import { cleanEnv, startBenchRelay, startUpstream } from "./servers";
import { formatMs, percentile, round, summarize } from "./stats";

const { values } = parseArgs({ options: { streams: { type: "string", default: "50" } }, strict: true });
const STREAMS = Number(values.streams);
const WARM_UP = 10;
const COMPLETIONS = "/api/v1/tab/chat/completions";
const root = new URL("../..", import.meta.url).pathname;
const env = { root, baseEnv: cleanEnv(process.env) };
process.once("exit", killAllSync);

for (const kind of ["nginx", "caddy"] as const) {
  const ready = ensureProxy(kind);
  if (!ready.ready) {
    console.error(`cannot measure: ${ready.reason}`);
    process.exit(1);
  }
}

const dir = mkdtempSync(join(tmpdir(), "tab-relay-proxy-bench-"));
const certificate = makeCertificate(dir);
// Eight chunks at once, as the streaming benchmark's upstream: the first token is there as soon as the relay asks.
const upstream = await startUpstream(env, { kind: "reply", text: "\n  return a + b;\n}\n// done here", chunks: 8 });
const ports: Record<ProxyKind, { http: number; https: number }> = {
  nginx: { http: await freePort(), https: await freePort() },
  caddy: { http: await freePort(), https: await freePort() },
};
// One relay behind both proxies; its public URL names nginx's port (only cookies and links use it).
const relay = await startBenchRelay(env, {
  settings: {
    TAB_RELAY_UPSTREAM_URL: upstream.url,
    TAB_RELAY_UPSTREAM_MODEL: "stand-in-coder",
    TAB_RELAY_CACHE_ENTRIES: "0",
    TAB_RELAY_RATE_LIMITS: "reads=10000000",
    TAB_RELAY_PUBLIC_URL: `https://${SITE}:${ports.nginx.https}`,
    TAB_RELAY_TRUST_PROXY: "127.0.0.1",
    TAB_RELAY_LOG_LEVEL: "warn",
  },
});
const relayPort = Number(new URL(relay.url).port);
const proxies: ProxyProcess[] = [];
for (const kind of ["nginx", "caddy"] as const)
  proxies.push(await startProxy(kind, { ports: ports[kind], relayPort, certificate }));

const headers = { authorization: `Bearer ${relay.apiKey}` };
const body = completionBody({}, { stream: true });

interface Path {
  name: string;
  connection: "kept alive" | "new per stream";
  run(): Promise<StreamTiming>;
  close(): void;
}

function proxied(kind: ProxyKind, keepAlive: boolean): Path {
  const origin = `https://${SITE}:${ports[kind].https}`;
  let client = new ProxyClient(origin, certificate.pem);
  return {
    name: `through ${kind === "nginx" ? "nginx 1.22 (docs/deploy/nginx.conf)" : "Caddy 2.6 (docs/deploy/Caddyfile)"}, TLS`,
    connection: keepAlive ? "kept alive" : "new per stream",
    async run() {
      if (!keepAlive) {
        client.close();
        client = new ProxyClient(origin, certificate.pem);
      }
      return client.stream(COMPLETIONS, headers, body);
    },
    close: () => client.close(),
  };
}

function direct(keepAlive: boolean): Path {
  const agent = new HttpAgent({ keepAlive });
  return {
    name: "relay directly, plain http",
    connection: keepAlive ? "kept alive" : "new per stream",
    run: () => directStream(`${relay.url}${COMPLETIONS}`, headers, body, agent),
    close: () => agent.destroy(),
  };
}

const paths: Path[] = [
  direct(true),
  proxied("nginx", true),
  proxied("caddy", true),
  direct(false),
  proxied("nginx", false),
  proxied("caddy", false),
];
const samples = new Map<Path, { first: number[]; end: number[] }>(paths.map((path) => [path, { first: [], end: [] }]));
const loadBefore = loadavg()[0] ?? 0;
try {
  for (let round_ = -WARM_UP; round_ < STREAMS; round_++) {
    for (const path of paths) {
      const timing = await path.run();
      if (timing.status !== 200 || timing.contentAtMs.length === 0)
        throw new Error(`${path.name}: status ${timing.status}, ${timing.contentAtMs.length} chunks with text`);
      if (round_ < 0) continue;
      const taken = samples.get(path);
      taken?.first.push(timing.contentAtMs[0] as number);
      taken?.end.push(timing.endMs);
    }
  }
} finally {
  for (const path of paths) path.close();
  for (const proxy of proxies) await proxy.stop();
  await relay.stop();
  await upstream.server.stop();
  rmSync(dir, { recursive: true, force: true });
}

const rows = paths.map((path) => {
  const taken = samples.get(path) ?? { first: [], end: [] };
  const firstP90 = percentile(
    [...taken.first].sort((a, b) => a - b),
    90,
  );
  return {
    path: path.name,
    connection: path.connection,
    first: { ...summarize(taken.first), p90: firstP90 },
    end: summarize(taken.end),
  };
});
const baseline = (connection: Path["connection"]) =>
  rows.find((row) => row.connection === connection && row.path.startsWith("relay directly"))?.first.p50 ?? Number.NaN;
const machine = {
  cpus: cpus().length,
  cpu: cpus()[0]?.model ?? "unknown",
  node: process.version,
  load_before: round(loadBefore, 2),
  load_after: round(loadavg()[0] ?? 0, 2),
};
console.log(
  `\n${STREAMS} streams per path after ${WARM_UP} to warm up, one at a time, interleaved; ${machine.cpus} × ${machine.cpu}, Node ${machine.node}, 1-minute load ${machine.load_before} before and ${machine.load_after} after.\n`,
);
console.log(
  "| path | connection | first token p50 (ms) | first token p90 (ms) | over direct, p50 (ms) | stream end p50 (ms) |",
);
console.log("|---|---|---:|---:|---:|---:|");
const signed = (ms: number) => `${ms < 0 ? "−" : "+"}${formatMs(Math.abs(ms))}`;
for (const row of rows) {
  const over = row.path.startsWith("relay directly") ? "" : signed(row.first.p50 - baseline(row.connection));
  console.log(
    `| ${row.path} | ${row.connection} | ${formatMs(row.first.p50)} | ${formatMs(row.first.p90)} | ${over} | ${formatMs(row.end.p50)} |`,
  );
}
const outDir = join(root, "test-output/bench");
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "proxy.json"), `${JSON.stringify({ machine, streams: STREAMS, rows }, null, 2)}\n`);
console.log(`\nwritten to ${join(outDir, "proxy.json")}`);
