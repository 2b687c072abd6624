// An HTTP proxy on loopback that does what corporate proxies do for https: it answers CONNECT host:port with
// "200 Connection Established" and then pipes bytes both ways (RFC 9110 §9.3.6). It resolves names from its own
// table, so a client can reach `hub.models.test` (a name no DNS knows, RFC 6761) only through it. Every CONNECT
// target is recorded. Plain requests (absolute-form forwarding) are refused with 405: this proxy only tunnels.
import { type Server, createServer } from "node:http";
import { type AddressInfo, type Socket, connect } from "node:net";

export interface ConnectProxy {
  url: string;
  /** `host:port` of every CONNECT, in order. */
  connects: string[];
  close(): Promise<void>;
}

export async function startConnectProxy(
  routes: Record<string, { host: string; port: number }>,
  /** `user:password` the proxy demands in Proxy-Authorization (Basic, RFC 9110 §11.7.1); 407 without it. */
  credentials?: string,
): Promise<ConnectProxy> {
  const connects: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((_req, res) => {
    res.writeHead(405, { "content-length": 0 });
    res.end();
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  server.on("connect", (req, client: Socket, head: Buffer) => {
    const target = req.url ?? "";
    connects.push(target);
    const expected = credentials === undefined ? undefined : `Basic ${Buffer.from(credentials).toString("base64")}`;
    if (expected !== undefined && req.headers["proxy-authorization"] !== expected) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm="test"\r\ncontent-length: 0\r\n\r\n',
      );
      return;
    }
    const match = /^([^:]+):(\d+)$/.exec(target);
    const route = match ? routes[match[1] as string] : undefined;
    if (!match || route === undefined) {
      client.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    const upstream = connect(route.port, route.host, () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connects,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
