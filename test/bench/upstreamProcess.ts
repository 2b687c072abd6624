/**
 * Runs the OpenAI-compatible upstream stand-in in a process of its own, so the benchmark's load
 * generator and the servers under test don't share its event loop.
 * Usage: node --import tsx test/bench/upstreamProcess.ts '<StandInBehaviour as JSON>'
 * Prints one JSON line `{"url": "http://127.0.0.1:PORT/v1"}` on stdout once it listens; stops on SIGTERM or when stdin closes.
 */
import { type StandInBehaviour, startUpstreamStandIn } from "../support/upstreamStandIn";

const behaviour = JSON.parse(process.argv[2] ?? '{"kind":"reply","text":"Hello from the stand-in"}') as StandInBehaviour;
const standIn = await startUpstreamStandIn({ behaviour, model: "bench", record: false });
process.stdout.write(`${JSON.stringify({ url: standIn.url })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  standIn.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
// The benchmark holds our stdin open; when it closes, the benchmark is gone and so should we be.
process.stdin.once("close", stop);
process.stdin.resume();
