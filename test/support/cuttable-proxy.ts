/**
 * A TCP proxy on a free loopback port in front of one address (the test API server), that a test
 * can cut and heal: what a process connected through it sees when its network to the store
 * goes, as an iptables DROP rule would make it. While cut, nothing is forwarded either way:
 * what either side of a connection sends, open or new, is held back (the sender's requests go
 * unanswered until its own timeouts), and no connection is closed, so the client learns nothing
 * but silence. Healed, what was held is delivered on every connection the client still holds,
 * and those accepted during the cut are connected upstream then: as TCP's retransmissions would
 * after the rule's removal.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface CuttableProxy {
  /** Where clients connect: 127.0.0.1 and this port. */
  port: number;
  cut: () => void;
  heal: () => void;
  /** Whether it is cut now. */
  isCut: () => boolean;
  /** Closes the listener and every connection. */
  close: () => Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** What either side sent while cut (or before the upstream connected): forwarded at the heal. */
  toUpstream: Buffer[];
  toClient: Buffer[];
}

export async function startCuttableProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const pairs = new Set<Pair>();
  let cut = false;

  const drop = (p: Pair) => {
    p.client.destroy();
    p.upstream?.destroy();
    pairs.delete(p);
  };
  const flush = (p: Pair) => {
    if (!p.upstream) {
      const up = connect(target.port, target.host);
      p.upstream = up;
      up.on('data', (d: Buffer) => (cut ? p.toClient.push(d) : p.client.write(d)));
      up.on('error', () => drop(p));
      up.on('close', () => drop(p));
    }
    for (const d of p.toUpstream.splice(0)) p.upstream.write(d);
    for (const d of p.toClient.splice(0)) p.client.write(d);
  };

  const server: Server = createServer((client) => {
    const p: Pair = { client, upstream: null, toUpstream: [], toClient: [] };
    pairs.add(p);
    client.on('data', (d: Buffer) => (cut || !p.upstream ? p.toUpstream.push(d) : p.upstream.write(d)));
    client.on('error', () => drop(p));
    client.on('close', () => drop(p));
    if (!cut) flush(p);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  return {
    port,
    isCut: () => cut,
    cut: () => {
      cut = true;
    },
    heal: () => {
      cut = false;
      for (const p of pairs) flush(p);
    },
    close: async () => {
      for (const p of [...pairs]) drop(p);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
