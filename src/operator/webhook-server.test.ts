import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { silentLogger } from '../log.js';
import { MAX_BODY_BYTES, MAX_CONCURRENT_REVIEWS, WebhookServer, MUTATE_PATH } from './webhook-server.js';
import { OperatorMetrics } from './operator-metrics.js';
import { issue } from './x509.js';
import { fixedMarkKeys } from './injection-mark.js';

const now = Date.now();
const ca = issue({ commonName: 'ca', notBefore: new Date(now - 60_000), notAfter: new Date(now + 86_400_000) });
const leaf = () =>
  issue({
    commonName: 'localhost',
    hosts: ['localhost', '127.0.0.1'],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3_600_000),
    issuer: { ...ca, commonName: 'ca' },
  });
const defaults = {
  image: 'leasehold:test',
  imagePullPolicy: 'IfNotPresent',
  nativeSidecar: 'false',
  clusterSupportsNativeSidecars: true,
  marks: fixedMarkKeys(Buffer.alloc(32, 1)),
} as const;

/** One request on a fresh TLS connection, trusting only the test CA; resolves with status, body and the served certificate. */
function call(port: number, method: string, path: string, body?: string): Promise<{ status: number; body: string; cert: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, ca: ca.certPem, agent: false, headers: { 'Content-Type': 'application/json' } }, (res) => {
      const cert = (res.socket as import('node:tls').TLSSocket).getPeerX509Certificate()?.toString() ?? '';
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text, cert }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const reviewBody = (annotations: Record<string, string> = {}) =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'abc',
      kind: { kind: 'Pod' },
      operation: 'CREATE',
      namespace: 'ns',
      object: { metadata: { generateName: 'job-', annotations }, spec: { containers: [{ name: 'app', image: 'busybox' }] } },
    },
  });

test('the server answers AdmissionReviews over TLS with a certificate the CA signed, and swaps it in place', async (t) => {
  const metrics = new OperatorMetrics(false);
  const server = new WebhookServer(defaults, silentLogger, metrics);
  const first = leaf();
  server.setCertificate(first.certPem, first.keyPem);
  const port = await server.listen('127.0.0.1', 0);
  t.after(() => server.close());

  const ok = await call(port, 'POST', MUTATE_PATH, reviewBody());
  assert.equal(ok.status, 200);
  const answer = JSON.parse(ok.body) as { response: { uid: string; allowed: boolean; patch?: string } };
  assert.equal(answer.response.uid, 'abc');
  assert.equal(answer.response.allowed, true);
  assert.ok(answer.response.patch);
  assert.equal(ok.cert, new X509Certificate(first.certPem).toString());

  const refused = JSON.parse((await call(port, 'POST', MUTATE_PATH, reviewBody({ 'leasehold.io/lease-duration': 'soon' }))).body) as {
    response: { allowed: boolean; status: { message: string } };
  };
  assert.equal(refused.response.allowed, false);
  assert.match(refused.response.status.message, /leasehold\.io\/lease-duration "soon"/);

  const second = leaf();
  server.setCertificate(second.certPem, second.keyPem);
  const after = await call(port, 'POST', MUTATE_PATH, reviewBody());
  assert.equal(after.status, 200);
  assert.equal(after.cert, new X509Certificate(second.certPem).toString(), 'a new connection gets the new certificate');

  assert.equal((await call(port, 'POST', MUTATE_PATH, '{not json')).status, 400);
  assert.equal((await call(port, 'GET', MUTATE_PATH)).status, 405);
  assert.equal((await call(port, 'GET', '/elsewhere')).status, 404);
  assert.equal((await call(port, 'GET', '/healthz')).status, 200);
  const scraped = (await call(port, 'GET', '/metrics')).body;
  assert.match(scraped, /leasehold_operator_admission_seconds_count\{result="injected"\} 2/);
  assert.match(scraped, /leasehold_operator_admission_seconds_count\{result="refused"\} 1/);
  // Fine enough under a millisecond to bound the handler's p99 (bench/scenarios/operator-admission.ts).
  for (const le of ['0.0001', '0.00025', '0.00075', '0.0015', '0.0075'])
    assert.match(scraped, new RegExp(`leasehold_operator_admission_seconds_bucket\\{le="${le}",result="injected"\\} \\d`));
});

test('a certificate whose key does not match is refused, and the one served so far is kept', async (t) => {
  const server = new WebhookServer(defaults, silentLogger, new OperatorMetrics(false));
  const first = leaf();
  const other = leaf();
  // Before it listens, as after: a pair that cannot be served never becomes the current one.
  assert.throws(() => server.setCertificate(first.certPem, other.keyPem));
  assert.equal(server.certificate, undefined);
  server.setCertificate(first.certPem, first.keyPem);
  const port = await server.listen('127.0.0.1', 0);
  t.after(() => server.close());
  const second = leaf();
  assert.throws(() => server.setCertificate(second.certPem, first.keyPem));
  assert.equal(server.certificate, first.certPem);
  const served = await call(port, 'POST', MUTATE_PATH, reviewBody());
  assert.equal(served.status, 200);
  assert.equal(served.cert, new X509Certificate(first.certPem).toString());
  // The matching pair, given next, is taken.
  server.setCertificate(second.certPem, second.keyPem);
  assert.equal((await call(port, 'GET', '/healthz')).cert, new X509Certificate(second.certPem).toString());
});

/**
 * A request written by hand on its own TLS connection: the head as given (and as much of the
 * body), the rest left unsent. `response` is everything the server sent, once it closes.
 */
function raw(port: number, contentLength: number | 'chunked', bodyPart = ''): { socket: TLSSocket; response: Promise<string> } {
  const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem, servername: 'localhost' });
  const length = contentLength === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${contentLength}`;
  socket.write(`POST ${MUTATE_PATH} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${length}\r\n\r\n${bodyPart}`);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (c: string) => (text += c));
  const response = new Promise<string>((resolve) => {
    socket.on('close', () => resolve(text));
    socket.on('error', () => undefined);
  });
  return { socket, response };
}

/** Lets the event loop run until `cond` holds (the server has taken what was sent), or fails after many turns. */
async function turnsUntil(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 5_000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(cond(), what);
}

async function listening(t: import('node:test').TestContext, limits = {}) {
  const server = new WebhookServer(defaults, silentLogger, new OperatorMetrics(false), limits);
  const cert = leaf();
  server.setCertificate(cert.certPem, cert.keyPem);
  const port = await server.listen('127.0.0.1', 0);
  t.after(() => server.close());
  return { server, port };
}

test('a body larger than any pod the API server sends is refused (413) without being read, and the connection closed', { timeout: 20_000 }, async (t) => {
  const { server, port } = await listening(t);
  // Announced: refused on the headers alone.
  const announced = raw(port, MAX_BODY_BYTES + 1);
  t.after(() => announced.socket.destroy());
  assert.match(await announced.response, /^HTTP\/1\.1 413 [\s\S]*exceeds 4194304 bytes/);
  // Chunked, without a length: refused once the bound is passed.
  const chunked = raw(port, 'chunked');
  t.after(() => chunked.socket.destroy());
  const chunk = 'x'.repeat(256 * 1024);
  for (let sent = 0; sent <= MAX_BODY_BYTES && !chunked.socket.destroyed; sent += chunk.length) {
    if (!chunked.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)) await new Promise((r) => chunked.socket.once('drain', r));
  }
  assert.match(await chunked.response, /^HTTP\/1\.1 413 /);
  await turnsUntil('no review left in flight', () => server.reviewsInFlight === 0);
  // A pod's review is answered as before.
  assert.equal((await call(port, 'POST', MUTATE_PATH, reviewBody())).status, 200);
});

test('a review beyond the bound closes the oldest whose body is still arriving (408), and is answered', { timeout: 20_000 }, async (t) => {
  const { server, port } = await listening(t);
  // Bodies that never finish, as a slow or hostile client sends them: they must not keep the
  // API server's reviews out (with failurePolicy Fail, every labelled pod would be refused).
  const held: ReturnType<typeof raw>[] = [];
  t.after(() => held.forEach((h) => h.socket.destroy()));
  for (let i = 0; i < MAX_CONCURRENT_REVIEWS; i++) {
    held.push(raw(port, 1_000_000, '{"kind":'));
    await turnsUntil(`${i + 1} reviews in flight`, () => server.reviewsInFlight === i + 1);
  }
  const ok = await call(port, 'POST', MUTATE_PATH, reviewBody());
  assert.equal(ok.status, 200);
  assert.equal((JSON.parse(ok.body) as { response: { allowed: boolean } }).response.allowed, true);
  assert.match(await held[0]!.response, /^HTTP\/1\.1 408 [\s\S]*still arriving when 8 reviews were in flight/);
  await turnsUntil('the others still in flight', () => server.reviewsInFlight === MAX_CONCURRENT_REVIEWS - 1);
  assert.ok(
    held.slice(1).every((h) => !h.socket.destroyed && h.socket.readyState === 'open'),
    'only the oldest closed',
  );
});

test('a body that does not arrive within its time is answered 408, and its slot given back', { timeout: 20_000 }, async (t) => {
  const { server, port } = await listening(t, { bodyTimeoutMs: 200 });
  const slow = raw(port, 100, '{');
  t.after(() => slow.socket.destroy());
  assert.match(await slow.response, /^HTTP\/1\.1 408 [\s\S]*did not arrive within 200 ms/);
  assert.equal(server.reviewsInFlight, 0);
});

test('connections past the bound close the oldest idle one, and a review is still answered', { timeout: 20_000 }, async (t) => {
  const max = 16;
  const { server, port } = await listening(t, { maxConnections: max });
  // Handshakes completed, nothing sent: what any client that can reach the port can hold for free.
  const idle: { socket: TLSSocket; closed: Promise<void> }[] = [];
  t.after(() => idle.forEach((c) => c.socket.destroy()));
  for (let i = 0; i < max + 4; i++) {
    const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem, servername: 'localhost' });
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await Promise.race([new Promise((resolve) => socket.once('secureConnect', resolve)), closed]);
    idle.push({ socket, closed });
  }
  // The four oldest make room for the four newest.
  await Promise.all(idle.slice(0, 4).map((c) => c.closed));
  assert.equal(server.openConnections, max);
  assert.ok(
    idle.slice(4).every((c) => !c.socket.destroyed),
    'the newest kept',
  );
  const ok = await call(port, 'POST', MUTATE_PATH, reviewBody());
  assert.equal(ok.status, 200);
  await idle[4]!.closed;
  assert.ok(server.openConnections <= max);
});
