import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ackedEnvelope } from "./agentSockets";

describe("ackedEnvelope", () => {
  test("an acknowledgement names its envelope, with or without other fields", () => {
    assert.equal(ackedEnvelope('{"type":"ack","envelope_id":"evt_1"}'), "evt_1");
    assert.equal(ackedEnvelope('{"envelope_id":"evt_2","type":"ack","payload":{"ok":true}}'), "evt_2");
  });

  test("every other JSON text, and text that is not JSON, acknowledges nothing", () => {
    const others = [
      "null",
      "1",
      "true",
      '"ack"',
      "[]",
      "[null]",
      '[{"type":"ack","envelope_id":"evt_1"}]',
      "{}",
      '{"type":"ack"}',
      '{"type":"ack","envelope_id":null}',
      '{"type":"ack","envelope_id":42}',
      '{"type":"ACK","envelope_id":"evt_1"}',
      '{"type":["ack"],"envelope_id":"evt_1"}',
      '{"__proto__":{"type":"ack"},"envelope_id":"evt_1"}',
      "not json",
      "",
    ];
    for (const text of others) assert.equal(ackedEnvelope(text), undefined, text);
  });
});
