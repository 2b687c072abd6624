import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startLlamaCppStandIn } from "../../../test/support/standIns/llamaCpp";
import type { StandIn } from "../../../test/support/standIns/server";
import { startVllmStandIn } from "../../../test/support/standIns/vllm";
import { createHttpPost } from "../providers/httpPost";
import { sendTestCompletion } from "./roundTrip";

/** A clock that moves 5 ms each time it is read. */
function steppingClock() {
  let now = 0;
  return { now: () => (now += 5) };
}

describe("doctor's test completion", () => {
  const post = createHttpPost();
  let vllm: StandIn;
  let llama: StandIn & { model: string };
  before(async () => {
    vllm = await startVllmStandIn({ model: "Qwen/Qwen2.5-Coder-7B" });
    llama = await startLlamaCppStandIn({ suffixOnCompletions: "ignore" });
  });
  after(async () => {
    await post.destroy();
    await vllm.close();
    await llama.close();
  });
  const settings = { model: "Qwen/Qwen2.5-Coder-7B", infillMaxPredictMs: 500, timeoutMs: 5_000 };

  test("goes through the relay's provider in the given mode and times the first fragment and the end", async () => {
    vllm.enqueue({ text: ["return", " a + b;"] });
    const trip = await sendTestCompletion(
      { ...settings, api: "fim", url: `${vllm.origin}/v1`, fimTemplate: "qwen-coder" },
      { post, clock: steppingClock() },
    );
    assert.deepEqual(trip, {
      ok: true,
      url: `${vllm.origin}/v1/completions`,
      status: 200,
      text: "return a + b;",
      firstFragmentMs: 5,
      totalMs: 10,
    });
    const body = vllm.requests.at(-1)?.body as Record<string, unknown>;
    assert.equal(body["prompt"], "<|fim_prefix|>function add(a, b) {\n  <|fim_suffix|>\n}\n<|fim_middle|>");
    assert.deepEqual([body["max_tokens"], body["temperature"]], [16, 0.2]);
  });

  test("a refusal carries the upstream's error, its status and the relay's hint", async () => {
    const trip = await sendTestCompletion(
      { ...settings, api: "suffix", url: `${vllm.origin}/v1` },
      { post, clock: steppingClock() },
    );
    assert.equal(trip.ok, false);
    assert.equal(trip.status, 400);
    assert.equal(
      trip.error,
      "Upstream answered 400: suffix is not currently supported. Hint: this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim",
    );
    assert.equal(trip.hint, "this server does not take `suffix`: set TAB_RELAY_UPSTREAM_API=fim");
    assert.equal(trip.text, "");
    assert.equal(trip.firstFragmentMs, undefined);
  });

  test("a server that took the request but is the wrong kind works, with the relay's hint", async () => {
    llama.enqueue("a + b;");
    const trip = await sendTestCompletion(
      { ...settings, model: llama.model, api: "suffix", url: `${llama.origin}/v1` },
      { post, clock: steppingClock() },
    );
    assert.deepEqual([trip.ok, trip.text], [true, "a + b;"]);
    assert.match(trip.hint ?? "", /^this server looks like llama\.cpp .* set TAB_RELAY_UPSTREAM_API=infill/);
  });

  test("nothing listening is a failure without a status", async () => {
    const trip = await sendTestCompletion(
      { ...settings, api: "chat", url: "http://127.0.0.1:1/v1" },
      { post, clock: steppingClock() },
    );
    assert.deepEqual([trip.ok, trip.status], [false, undefined]);
    assert.match(trip.error ?? "", /^Upstream connection failed: .*ECONNREFUSED/);
  });
});
