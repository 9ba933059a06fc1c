/**
 * A tiny app for the health tests, run as a real process: an HTTP server on 127.0.0.1 whose
 * GET /healthz answers by its mode. `node health-app.mjs PORT MODE` (PORT 0: any free port):
 * - ok: 200 always;
 * - flap:MS: 200 until it gets SIGUSR2, then 503 and 200 in turn, each for MS milliseconds;
 * - until-signal: 503 until it gets SIGUSR2, then 200 (a test says when the app is ready,
 *   not a clock: on a loaded machine a fixed delay ran out before the test had looked).
 * Prints `listening PORT` once it listens, `answered STATUS` for each request, and
 * `first-200 EPOCH_MS` when it first answers 200.
 */
import { createServer } from 'node:http';
import process from 'node:process';

const [portArg = '0', mode = 'ok'] = process.argv.slice(2);
const [kind, msArg] = mode.split(':');
const ms = Number(msArg);
let signalledAt = null;
process.on('SIGUSR2', () => (signalledAt ??= Date.now()));

function healthy() {
  if (kind === 'flap') return signalledAt === null || Math.floor((Date.now() - signalledAt) / ms) % 2 === 1;
  if (kind === 'until-signal') return signalledAt !== null;
  return true;
}

let said200 = false;
const server = createServer((req, res) => {
  const ok = healthy();
  if (ok && !said200) {
    said200 = true;
    process.stdout.write(`first-200 ${Date.now()}\n`);
  }
  process.stdout.write(`answered ${ok ? 200 : 503}\n`);
  res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' });
  res.end(ok ? 'ok\n' : 'not ready\n');
});
server.listen(Number(portArg), '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
