/**
 * The operator's servers' bound on open connections (the webhook's and policy mode's probe
 * port): at most `max` at once; one more closes the oldest connection no request is being
 * answered on (one that connected and sent nothing yet, or an idle kept-alive one), so clients
 * that connect and wait cannot keep the API server's reviews or the kubelet's probes out; when
 * every open one is answering, the new one goes instead. Connections are keyed by the peer's
 * address and port: the same for a TCP socket and the TLS socket over it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';

/** A server the room can close with every connection on it (node:http's and node:https'). */
type ClosableServer = Server & { closeAllConnections(): void };

export class ConnectionRoom<S extends ClosableServer = ClosableServer> {
  /** Open connections by arrival, oldest first. */
  private readonly open = new Map<string, Socket>();
  /** The connections a request is being read or answered on. */
  private readonly answering = new Set<string>();
  private held: S | undefined;

  constructor(private readonly max: number) {}

  /** The server listening (or about to), if any: the one close() closes. */
  get server(): S | undefined {
    return this.held;
  }

  /**
   * Admits the server's connections here, keeps it as the one to close, and listens on
   * host:port; resolves with the bound port. A server that never listened is not kept.
   */
  async listen(server: S, host: string, port: number): Promise<number> {
    server.on('connection', (socket: Socket) => this.admit(socket));
    this.held = server;
    try {
      return await listenOn(server, host, port);
    } catch (err) {
      if (this.held === server) this.held = undefined;
      throw err;
    }
  }

  /** Closes the server kept by listen() and every connection on it; nothing when there is none. */
  async close(): Promise<void> {
    const server = this.held;
    if (!server) return;
    this.held = undefined;
    await closeAll(server);
  }

  /** For the server's 'connection' event. */
  admit(socket: Socket): void {
    const key = peer(socket);
    this.open.set(key, socket);
    socket.once('close', () => {
      if (this.open.get(key) === socket) this.open.delete(key);
    });
    if (this.open.size <= this.max) return;
    let victim: [string, Socket] = [key, socket];
    for (const entry of this.open) {
      if (entry[1] !== socket && !this.answering.has(entry[0])) {
        victim = entry;
        break;
      }
    }
    this.open.delete(victim[0]);
    victim[1].destroy();
  }

  /** For each request: its connection is not closed to make room until its answer is done. */
  answer(req: IncomingMessage, res: ServerResponse): void {
    const key = peer(req.socket);
    this.answering.add(key);
    res.once('close', () => this.answering.delete(key));
  }

  get size(): number {
    return this.open.size;
  }
}

const peer = (s: Socket) => `${s.remoteAddress}|${s.remotePort}`;

/** Listens on host:port; resolves with the bound port, rejects with the listen error. */
async function listenOn(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** Closes the server and every connection on it. */
async function closeAll(server: ClosableServer): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
