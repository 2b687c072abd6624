import { isIP } from "node:net";

/** Longest webhook URL accepted; longer ones are refused when the URL is set. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * IPv4 ranges a webhook must never reach: anything not globally routable, because a relay inside a private network
 * (or on a cloud host with a metadata service at 169.254.169.254) would otherwise be a proxy into it.
 */
const BLOCKED_V4: ReadonlyArray<readonly [base: string, bits: number]> = [
  ["0.0.0.0", 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // shared address space (carrier-grade NAT)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata services
  ["172.16.0.0", 12],
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16],
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, includes 255.255.255.255
];

function v4ToNumber(ip: string): number {
  return ip.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);
}

const BLOCKED_V4_RANGES = BLOCKED_V4.map(([base, bits]) => ({ prefix: v4ToNumber(base) >>> (32 - bits), bits }));

function isBlockedV4(value: number): boolean {
  return BLOCKED_V4_RANGES.some(({ prefix, bits }) => value >>> (32 - bits) === prefix);
}

/** The eight 16-bit groups of a valid IPv6 address (zone id dropped, embedded dotted IPv4 tail folded in). */
function v6Groups(ip: string): number[] {
  let text = ip.split("%")[0] ?? "";
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const fill = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill("0");
  return [...headGroups, ...fill, ...tailGroups].map((group) => parseInt(group, 16));
}

function isBlockedV6(ip: string): boolean {
  const g = v6Groups(ip);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const low32 = g6 * 0x10000 + g7;
  const zeroUpTo = (count: number) => g.slice(0, count).every((group) => group === 0);
  // Forms that carry an IPv4 address reach that IPv4 host, so they are judged as it.
  if (zeroUpTo(5) && g5 === 0xffff) return isBlockedV4(low32); // IPv4-mapped ::ffff:a.b.c.d
  if (zeroUpTo(4) && g4 === 0xffff && g5 === 0) return isBlockedV4(low32); // IPv4-translated ::ffff:0:a.b.c.d
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isBlockedV4(low32); // NAT64
  if (g0 === 0x2002) return isBlockedV4(g1 * 0x10000 + g2); // 6to4
  // Only global unicast (2000::/3) is routable; this also covers ::, ::1, IPv4-compatible ::a.b.c.d, the local NAT64
  // prefix 64:ff9b:1::/48, discard-only 100::/64, fc00::/7, fe80::/10, deprecated site-local fec0::/10 and ff00::/8.
  if ((g0 & 0xe000) !== 0x2000) return true;
  if (g0 === 0x2001 && g1 === 0) return true; // Teredo: tunnels to an arbitrary (possibly private) IPv4 client
  if (g0 === 0x2001 && g1 === 0x2 && g2 === 0) return true; // benchmarking 2001:2::/48
  if (g0 === 0x2001 && g1 === 0xdb8) return true; // documentation 2001:db8::/32
  if (g0 === 0x3fff && (g1 & 0xf000) === 0) return true; // documentation 3fff::/20
  return false;
}

/**
 * Whether a webhook may not connect to this address: private, loopback, link-local, shared, documentation,
 * benchmarking, multicast, reserved and unspecified ranges, with IPv4 carried inside IPv6 judged as the IPv4 address.
 * Anything that is not an IP address counts as blocked, so a caller's mistake fails closed.
 */
export function isBlockedAddress(ip: string): boolean {
  // Brackets are how URLs write IPv6 hosts; they never wrap IPv4.
  if (ip.startsWith("[") && ip.endsWith("]")) {
    const inner = ip.slice(1, -1);
    return isIP(inner) === 6 ? isBlockedV6(inner) : true;
  }
  switch (isIP(ip)) {
    case 4:
      return isBlockedV4(v4ToNumber(ip));
    case 6:
      return isBlockedV6(ip);
    default:
      return true;
  }
}

/** `localhost` and its subdomains always mean this host (RFC 6761), whatever DNS says. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

/** The setting that lets webhooks reach this machine and private networks (relay/src/config.ts). */
export const ALLOW_PRIVATE_VARIABLE = "TAB_RELAY_WEBHOOK_ALLOW_PRIVATE";
const UNLESS_ALLOWED = `refused unless the relay runs with ${ALLOW_PRIVATE_VARIABLE}=true (for an agent on this machine or a private network)`;

/** 127.0.0.0/8, ::1, and 127/8 written as IPv4-mapped IPv6 (the URL parser's `::ffff:7f00:1`). */
function isLoopback(host: string): boolean {
  return /^127\./.test(host) || host === "::1" || /^::ffff:7f[0-9a-f]{2}:/i.test(host) || /^::ffff:127\./i.test(host);
}

/**
 * Checks a webhook URL when an agent's URL is set. Addresses behind a host name are checked again at delivery time on
 * the address actually connected to; this only refuses what is wrong on its face.
 * @returns a sentence describing the problem, or undefined when the URL is acceptable
 */
export function webhookUrlProblem(url: string, allowPrivate: boolean): string | undefined {
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return `Webhook URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters.`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "Webhook URL is not a valid absolute URL.";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return allowPrivate ? "Webhook URL must use https or http." : "Webhook URL must use https.";
  }
  if (parsed.username !== "" || parsed.password !== "") return "Webhook URL must not contain a user name or password.";
  // The address comes before the scheme: for http://127.0.0.1 the address is what stands in the way, not the http.
  if (!allowPrivate) {
    if (isLocalhostName(parsed.hostname))
      return `Webhook URL points at ${parsed.hostname}, a loopback name (this machine): ${UNLESS_ALLOWED}.`;
    // The URL parser has already normalised odd IPv4 spellings such as 2130706433 or 0x7f.1 to dotted form.
    const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
    if (isIP(host) !== 0 && isBlockedAddress(host)) {
      const kind = isLoopback(host) ? "a loopback address (this machine)" : "a private, link-local or reserved address";
      return `Webhook URL points at ${host}, ${kind}: ${UNLESS_ALLOWED}.`;
    }
  }
  if (parsed.protocol === "http:" && !allowPrivate)
    return `Webhook URL must use https (plain http is accepted only with ${ALLOW_PRIVATE_VARIABLE}=true).`;
  return undefined;
}
