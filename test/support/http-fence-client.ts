/**
 * What the fenced HTTP handler's tests share (src/fencing/http-fence.test.ts on SQLite,
 * test/postgres/http-fence.test.ts): a server on port 0, a POST, and a POST whose 1 GiB body
 * is never sent.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { NodeHandler } from '../../src/fencing/http-fence.js';

/** Reads a request body to the end (the handler's job, once the fence let it through). */
export async function readBody(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const chunk of req) s += String(chunk);
  return s;
}

export async function listen(handler: NodeHandler): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

export async function post(port: number, headers: Record<string, string>, body = ''): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/orders', headers }, (res) => {
      let s = '';
      res.on('data', (d: Buffer) => (s += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: s ? (JSON.parse(s) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends a request announcing a body of 1 GiB, writes its first 64 KiB, and resolves with the
 * response's status line and body as soon as they arrive: a server that waited for the body
 * would never answer (the rest is never sent).
 */
export function postHugeBodyUnsent(port: number, headers: Record<string, string>): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    socket.on('error', (e) => (got.includes('\r\n\r\n') ? undefined : reject(e)));
    socket.on('data', (d: Buffer) => {
      got += d.toString();
      const end = got.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(got)?.[1];
      if (end >= 0 && length && got.length >= end + 4 + Number(length)) {
        socket.destroy();
        resolve({ head: got.slice(0, got.indexOf('\r\n')), body: got.slice(end + 4) });
      }
    });
    socket.on('close', () => reject(new Error(`connection closed before a whole response: ${JSON.stringify(got)}`)));
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 ** 30}\r\n${lines.join('')}\r\n`);
    socket.write(Buffer.alloc(64 * 1024, 'x'));
  });
}

/**
 * A POST with `Expect: 100-continue` on a raw socket: the body is sent only after an interim
 * `100 Continue`, as a careful client does. Resolves with the interim lines heard, the final
 * status line and body, and whether the body went out.
 */
export function postExpectingContinue(
  port: number,
  headers: Record<string, string>,
  body: string,
  path = '/orders',
): Promise<{ interim: string[]; head: string; body: string; bodySent: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const interim: string[] = [];
    let got = '';
    let bodySent = false;
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      got += d.toString();
      for (;;) {
        const end = got.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = got.slice(0, got.indexOf('\r\n'));
        if (/^HTTP\/1\.1 1\d\d /.test(head)) {
          interim.push(head);
          got = got.slice(end + 4);
          if (!bodySent && /^HTTP\/1\.1 100 /.test(head)) {
            bodySent = true;
            socket.write(body);
          }
          continue;
        }
        const length = Number(/content-length: (\d+)/i.exec(got.slice(0, end))?.[1] ?? 0);
        if (got.length < end + 4 + length) return;
        socket.destroy();
        return resolve({ interim, head, body: got.slice(end + 4, end + 4 + length), bodySent });
      }
    });
    socket.on('close', () => reject(new Error(`connection closed before a whole response: ${JSON.stringify(got)}`)));
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${lines.join('')}\r\n`);
  });
}
