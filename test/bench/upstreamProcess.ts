/**
 * Runs the OpenAI-compatible upstream stand-in in a process of its own, so the benchmark's load
 * generator and the servers under test don't share its event loop.
 * Usage: node --import tsx test/bench/upstreamProcess.ts '<StandInBehaviour as JSON>'
 * Prints one JSON line `{"url": "http://127.0.0.1:PORT/v1"}` on stdout once it listens; stops on SIGTERM or when stdin closes.
 */
import { type StandInBehaviour, startUpstreamStandIn } from "../support/upstreamStandIn";
import { stopWith } from "./stopWith";

const behaviour = JSON.parse(
  process.argv[2] ?? '{"kind":"reply","text":"Hello from the stand-in"}',
) as StandInBehaviour;
const standIn = await startUpstreamStandIn({ behaviour, model: "bench", record: false });
// The handlers first: the benchmark may stop this process as soon as it reads the address.
stopWith(() => standIn.close());
process.stdout.write(`${JSON.stringify({ url: standIn.url })}\n`);
