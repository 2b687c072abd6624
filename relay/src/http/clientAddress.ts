import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import proxyAddr from "proxy-addr";
import type { TrustProxy } from "../config";

/** The address a request came from, as far as the configured proxies can be believed. */
export type ClientAddress = (req: IncomingMessage) => string;

/** A socket that closed before it was asked has no address; such requests share one name. */
const UNKNOWN = "unknown";

/**
 * Names the client of a request for per-address limits and logs. Trusting no proxy, it is the socket's address
 * and `X-Forwarded-For` is never read. Otherwise proxy-addr (the package express's own `trust proxy` uses) walks
 * the chain from the socket outwards, past every trusted hop, and answers the first address it cannot trust; a
 * client's own entries stand left of the ones its proxies append, so they are never reached. The hop count is
 * express's rule too (node_modules/express/lib/utils.js `compileTrust`: the address `i` hops out is trusted while
 * `i < hops`), and the list is compiled once here, as proxy-addr's README recommends.
 */
export function createClientAddress(trust: TrustProxy): ClientAddress {
  if (trust === false) return (req) => req.socket.remoteAddress ?? UNKNOWN;
  const trusted =
    typeof trust === "number" ? (_address: string, hop: number) => hop < trust : proxyAddr.compile([...trust]);
  return function clientAddress(req) {
    // proxy-addr starts from the socket's address; without one there is nothing to walk from.
    if (req.socket.remoteAddress === undefined) return UNKNOWN;
    // proxy-addr answers whatever entry it stops at, checked or not (index.js `alladdrs` only splits the header), so
    // a client's `not-an-ip <b>x</b>` or 8,000 characters would become its "address" in the audit log and a bucket of
    // its own. Only an IP address names a client; otherwise the nearest peer, the one that sent such a header, does.
    const address = proxyAddr(req, trusted);
    return isIP(address) !== 0 ? address : req.socket.remoteAddress;
  };
}

/** The eight 16-bit groups of an IPv6 address (zone dropped, an IPv4 tail folded in), or undefined if not one. */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.split("%")[0] ?? "";
  const ipv4Tail = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (ipv4Tail !== null) {
    const [a, b, c, d] = ipv4Tail.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, ipv4Tail.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const groups =
    halves.length === 2 ? [...head, ...Array<string>(8 - head.length - tail.length).fill("0"), ...tail] : head;
  if (groups.length !== 8 || !groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  return groups.map((group) => Number.parseInt(group, 16));
}

/**
 * The name of a client's per-address rate-limit bucket. An IPv6 client gets its /64: one subscriber is handed a whole
 * /64 (RFC 6177 recommends at least that much per site), so a bucket per address would let one machine take a fresh
 * bucket for every request. An IPv4 address seen as `::ffff:a.b.c.d` is that IPv4 address. Audit and logs keep the
 * full address.
 */
export function rateLimitAddress(address: string): string {
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  if (groups === undefined) return address;
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff)
    return `${g6 >> 8}.${g6 & 255}.${g7 >> 8}.${g7 & 255}`;
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(":")}::/64`;
}
