/**
 * CPU per upstream request of the relay's two transports, undici's (`createHttpPost`) and node:http's
 * (`createNodeHttpPost`), in one process taking turns against the streaming section's upstream stand-in in a process
 * of its own: each request posts a prompt-sized body and reads a streamed answer of 8 chunks to `[DONE]`.
 * Usage: npx tsx test/bench/transportCost.ts [rounds=8] [requests per round=5000] [in flight=50]
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { createHttpPost } from "../../relay/src/providers/httpPost";
import { createNodeHttpPost } from "../../relay/src/providers/nodeHttpPost";
import { REPLY } from "./streamingSection";

const rounds = Number(process.argv[2] ?? 8);
const perRound = Number(process.argv[3] ?? 5_000);
const inFlight = Number(process.argv[4] ?? 50);

async function main(): Promise<void> {
  const upstream = spawn(
    process.execPath,
    ["--import", "tsx", "test/bench/upstreamProcess.ts", JSON.stringify(REPLY)],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  const url = await new Promise<string>((resolve) =>
    createInterface({ input: upstream.stdout }).once("line", (line) =>
      resolve((JSON.parse(line) as { url: string }).url),
    ),
  );
  const target = `${url}/chat/completions`;
  const body = JSON.stringify({
    model: "bench",
    stream: true,
    messages: [{ role: "user", content: "x".repeat(1_500) }],
  });
  const transports = { undici: createHttpPost(), "node:http": createNodeHttpPost() };
  type Name = keyof typeof transports;
  const one = async (name: Name) => {
    const response = await transports[name](target, {
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body,
      signal: new AbortController().signal,
      idleTimeoutMs: 5_000,
    });
    await response.read((chunk) => (chunk.includes("[DONE]") ? "release" : undefined));
  };
  const round = async (name: Name, count: number) => {
    let left = count;
    const cpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (left-- > 0) await one(name);
      }),
    );
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / count;
  };
  const names = Object.keys(transports) as Name[];
  for (const name of names) await round(name, perRound / 2);
  const results: Record<Name, number[]> = { undici: [], "node:http": [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? names : [...names].reverse();
    const cells: string[] = [];
    for (const name of order) {
      const us = await round(name, perRound);
      results[name].push(us);
      cells.push(`${name} ${us.toFixed(1)} µs`);
    }
    console.log(`round ${r + 1}: ${cells.join(", ")}`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
  for (const name of names) console.log(`${name}: median ${median(results[name]).toFixed(1)} µs per request`);
  await Promise.all(Object.values(transports).map((transport) => transport.destroy()));
  upstream.kill();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
