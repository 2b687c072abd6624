/**
 * What one hop between two processes costs on this machine when the one woken has been idle: the floor under the
 * embedded engine's path, which makes four such hops that node-llama-cpp called in-process (`bench:engine`'s floor)
 * does not (the client's request to the relay, the relay's to the engine child, and both answers back).
 *
 * Two round trips, each timed after an idle gap in which neither side does anything:
 * - IPC: a `fork`ed Node child echoes a message of the size of a completion request (1.5 KB) over Node's IPC
 *   channel, which is how the relay talks to its engine child (relay/src/engine/engine.ts);
 * - HTTP: a bare `node:http` server answers a 1.5 KB POST with a small body, asked over one kept-alive
 *   `node:http` connection, as `bench:engine` asks the relay.
 * Back to back (no gap) is the warm figure; the longer gaps are a person's pauses between keystrokes, after which the
 * process woken has been idle.
 *
 * Usage: npx tsx test/bench/wakeUp.ts [--rounds n] [--gaps 0,1,20,100]
 */
import { fork } from "node:child_process";
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg } from "node:os";

if (process.argv[2] === "--echo") {
  process.on("message", (message) => process.send?.(message));
} else {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: string) => {
    const at = args.indexOf(name);
    return at >= 0 ? args[at + 1]! : fallback;
  };
  const rounds = Number(option("--rounds", "200"));
  const gaps = option("--gaps", "0,1,20,100").split(",").map(Number);
  const body = JSON.stringify({ prompt: "x".repeat(1500) });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))]!;

  const child = fork(import.meta.filename, ["--echo"], { execArgv: process.execArgv });
  const ipc = () =>
    new Promise<void>((resolve) => {
      child.once("message", () => resolve());
      child.send({ type: "complete", body });
    });

  const server = createServer((req, res) => {
    req.resume();
    req.once("end", () => res.end('data: {"content":"x"}\n\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const http = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        { agent, host: "127.0.0.1", port, method: "POST", path: "/", headers: { "content-type": "application/json" } },
        (res) => {
          res.resume();
          res.once("end", resolve);
        },
      );
      req.once("error", reject);
      req.end(body);
    });

  const timed = async (hop: () => Promise<void>, gapMs: number) => {
    const samples: number[] = [];
    for (let i = 0; i < 20; i++) await hop();
    for (let i = 0; i < rounds; i++) {
      if (gapMs > 0) await sleep(gapMs);
      const started = performance.now();
      await hop();
      samples.push(performance.now() - started);
    }
    return samples;
  };

  process.stderr.write(
    `load ${loadavg()
      .map((n) => n.toFixed(2))
      .join(" ")}, ${cpus().length} CPUs, ${cpus()[0]?.model}\n`,
  );
  console.log("| idle gap before each | IPC round trip p25 / p50 / p75 (ms) | HTTP round trip p25 / p50 / p75 (ms) |");
  console.log("|---:|---|---|");
  for (const gap of gaps) {
    const figures = [await timed(ipc, gap), await timed(http, gap)].map((xs) =>
      [0.25, 0.5, 0.75].map((q) => quantile(xs, q).toFixed(3)).join(" / "),
    );
    console.log(`| ${gap} ms | ${figures[0]} | ${figures[1]} |`);
  }
  process.stderr.write(
    `load ${loadavg()
      .map((n) => n.toFixed(2))
      .join(" ")}\n`,
  );
  agent.destroy();
  server.close();
  child.kill();
}
