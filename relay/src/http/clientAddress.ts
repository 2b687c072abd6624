import type { IncomingMessage } from "node:http";
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
    return proxyAddr(req, trusted);
  };
}
