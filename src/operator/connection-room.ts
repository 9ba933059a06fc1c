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

export class ConnectionRoom {
  /** Open connections by arrival, oldest first. */
  private readonly open = new Map<string, Socket>();
  /** The connections a request is being read or answered on. */
  private readonly answering = new Set<string>();

  constructor(private readonly max: number) {}

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
export async function listenOn(server: Server, host: string, port: number): Promise<number> {
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
export async function closeAll(server: Server & { closeAllConnections(): void }): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
