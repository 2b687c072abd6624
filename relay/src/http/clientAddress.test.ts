import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { describe, test } from "node:test";
import { createClientAddress } from "./clientAddress";

function request(remoteAddress: string | undefined, forwarded?: string): IncomingMessage {
  return {
    socket: { remoteAddress },
    headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded },
  } as unknown as IncomingMessage;
}

describe("createClientAddress", () => {
  test("trusting no proxy, the socket's address is the client's whatever the header says", () => {
    const clientAddress = createClientAddress(false);
    assert.equal(clientAddress(request("10.0.0.5", "1.2.3.4")), "10.0.0.5");
  });

  test("a hop count walks that many proxies out and no further", () => {
    const twoHops = createClientAddress(2);
    assert.equal(twoHops(request("10.0.0.5", "6.6.6.6, 1.2.3.4, 10.0.0.9")), "1.2.3.4");
    assert.equal(twoHops(request("10.0.0.5", "10.0.0.9")), "10.0.0.9", "a shorter chain ends at its last entry");
    assert.equal(twoHops(request("10.0.0.5")), "10.0.0.5");
  });

  test("a list stops at the first address outside it", () => {
    const clientAddress = createClientAddress(["10.0.0.0/8"]);
    assert.equal(clientAddress(request("10.0.0.5", "6.6.6.6, 1.2.3.4, 10.0.0.9")), "1.2.3.4");
    assert.equal(clientAddress(request("192.0.2.1", "1.2.3.4")), "192.0.2.1", "a peer outside the list is the client");
  });

  test("an IPv4 proxy seen through a dual-stack socket (::ffff:a.b.c.d) is still the proxy named in the list", () => {
    const clientAddress = createClientAddress(["127.0.0.1"]);
    assert.equal(clientAddress(request("::ffff:127.0.0.1", "1.2.3.4")), "1.2.3.4");
  });

  test("a request whose socket has already closed has no address to walk from", () => {
    assert.equal(createClientAddress(1)(request(undefined, "1.2.3.4")), "unknown");
    assert.equal(createClientAddress(false)(request(undefined)), "unknown");
  });
});
