/**
 * The operator's webhook port, taken by another process when the operator first tries to listen:
 * the failed listen is not kept as if it were listening. Each certificate check tries again, and
 * the webhook listens once the port is free (a real process against a real API server).
 */
import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { waitFor, type Proc } from '../support/cli.js';
import { freshNamespace, kubectl } from '../support/kube.js';
import { startOperatorProcess, stopOperators } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';

const WEBHOOK = `leasehold-operator-listen-test-${process.pid}`;
const started: Proc[] = [];
let namespace = '';
let blocker: Server | undefined;

after(async () => {
  stopOperators(started, WEBHOOK);
  await new Promise<void>((resolve) => (blocker?.listening ? blocker.close(() => resolve()) : resolve()));
  if (namespace) kubectl(['delete', 'namespace', namespace, '--wait=false', '--ignore-not-found']);
});

it('a webhook port taken at first: the operator listens once it is free', { timeout: 90_000 }, async () => {
  namespace = await freshNamespace('oplisten');
  const port = await freePort();
  const taken = createServer();
  blocker = taken;
  await new Promise<void>((resolve, reject) => {
    taken.once('error', reject);
    taken.listen(port, '127.0.0.1', () => resolve());
  });
  const operator = startOperatorProcess({ namespace, identity: 'op-listen', port, webhook: WEBHOOK });
  started.push(operator);
  await waitFor('the failed listen', () => /"msg":"certificate check failed".*EADDRINUSE/.test(operator.stderr()), 60_000, 100);
  await new Promise<void>((resolve) => taken.close(() => resolve()));
  // Certificate checks run every second (--tls-check 1s): the next one listens.
  await waitFor('the webhook to listen', () => operator.stderr().includes('"msg":"webhook listening"'), 10_000, 100);
  assert.match(operator.stderr(), new RegExp(`"msg":"webhook listening".*"port":${port}`));
});
