import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { createClientAddress, rateLimitAddress } from "./clientAddress";

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

  test("an entry that is not an IP address never names the client: the peer that sent it does", () => {
    for (const trust of [1, 2, ["10.0.0.0/8"]] as const) {
      const clientAddress = createClientAddress(trust);
      assert.equal(clientAddress(request("10.0.0.5", "not-an-ip <b>x</b>")), "10.0.0.5", String(trust));
      assert.equal(clientAddress(request("10.0.0.5", "9".repeat(8_000))), "10.0.0.5", String(trust));
    }
    assert.equal(createClientAddress(1)(request("10.0.0.5", "2001:db8::7")), "2001:db8::7", "IPv6 stays");
  });

  test("over real HTTP behind one trusted proxy, a forged header of markup or 8,000 characters is not an address", async () => {
    const clientAddress = createClientAddress(1);
    const server = createServer((req, res) => res.end(clientAddress(req)));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      for (const forged of ["not-an-ip <b>x</b>", "x".repeat(8_000), "1.2.3.4", "2001:db8::1"]) {
        const answer = await fetch(`http://127.0.0.1:${port}/`, { headers: { "X-Forwarded-For": forged } });
        const seen = await answer.text();
        assert.equal(seen, forged.length < 20 && !forged.includes("<") ? forged : "127.0.0.1", forged.slice(0, 20));
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("rateLimitAddress", () => {
  test("an IPv6 client's bucket is its /64, so one machine cannot take a new bucket per address", () => {
    assert.equal(rateLimitAddress("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
    assert.equal(rateLimitAddress("2001:db8:1:2::9"), "2001:db8:1:2::/64");
    assert.equal(rateLimitAddress("2001:DB8:0001:0002:0:0:0:1"), "2001:db8:1:2::/64");
    assert.equal(rateLimitAddress("fe80::1%eth0"), "fe80:0:0:0::/64");
    assert.equal(rateLimitAddress("::1"), "0:0:0:0::/64");
    assert.notEqual(rateLimitAddress("2001:db8:1:2::9"), rateLimitAddress("2001:db8:1:3::9"));
  });

  test("IPv4, also seen through a dual-stack socket, keeps a bucket per address", () => {
    assert.equal(rateLimitAddress("192.0.2.7"), "192.0.2.7");
    assert.equal(rateLimitAddress("::ffff:192.0.2.7"), "192.0.2.7");
    assert.equal(rateLimitAddress("unknown"), "unknown");
  });
});
