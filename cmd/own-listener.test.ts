import { it } from 'node:test';
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { probesOwnListener } from './own-listener.js';

const http = (url: string) => ({ http: url });
const tcp = (port: number, host?: string) => ({ tcp: host === undefined ? { port } : { host, port } });

it('a probe at the address the sidecar listens on is its own, in every spelling of that address', () => {
  const loopback = { host: '127.0.0.1', port: 4040 };
  for (const probe of [http('http://127.0.0.1:4040/readyz'), http('http://localhost:4040/'), http('http://0.0.0.0:4040/'), tcp(4040), tcp(4040, 'localhost')]) {
    assert.equal(probesOwnListener(loopback, probe), true, JSON.stringify(probe));
  }
  // Every IPv4 interface: loopback, the host's name, and what a probe of 0.0.0.0 reaches.
  const every = { host: '0.0.0.0', port: 4040 };
  for (const probe of [tcp(4040), tcp(4040, '127.0.0.2'), tcp(4040, hostname()), http('http://LOCALHOST:4040/healthz'), tcp(4040, '::ffff:127.0.0.1')]) {
    assert.equal(probesOwnListener(every, probe), true, JSON.stringify(probe));
  }
  // An IPv4-mapped IPv6 address reaches the IPv4 listener; a URL writes it in hex (::ffff:7f00:1).
  for (const probe of [http('http://[::ffff:127.0.0.1]:4040/readyz'), tcp(4040, '::ffff:7f00:1'), tcp(4040, '0:0:0:0:0:ffff:127.0.0.1')]) {
    assert.equal(probesOwnListener(loopback, probe), true, JSON.stringify(probe));
    assert.equal(probesOwnListener(every, probe), true, JSON.stringify(probe));
  }
  assert.equal(probesOwnListener({ host: '::', port: 4040 }, http('http://[::1]:4040/')), true, ':: takes IPv6 too');
  assert.equal(probesOwnListener({ host: '::1', port: 4040 }, tcp(4040, '0:0:0:0:0:0:0:1')), true, 'IPv6 in its long form');
  assert.equal(probesOwnListener({ host: '::1', port: 4040 }, http('http://localhost:4040/')), true);
  assert.equal(probesOwnListener({ host: 'localhost', port: 80 }, http('http://127.0.0.1/')), true, "http's default port is 80");
});

it("a probe of the app is not the sidecar's: another port, another loopback address, another family, a command", () => {
  const loopback = { host: '127.0.0.1', port: 4040 };
  for (const probe of [
    http('http://127.0.0.1:8080/healthz'),
    tcp(5432),
    tcp(4040, '127.0.0.2'),
    http('http://[::1]:4040/'),
    { exec: ['/bin/sh', '-c', 'true'] },
  ]) {
    assert.equal(probesOwnListener(loopback, probe), false, JSON.stringify(probe));
  }
  assert.equal(probesOwnListener({ host: '0.0.0.0', port: 4040 }, http('http://[::1]:4040/')), false, '0.0.0.0 takes IPv4 only');
  assert.equal(probesOwnListener({ host: '0.0.0.0', port: 4040 }, tcp(4040, 'app.example')), false, 'a name is compared as written');
  assert.equal(probesOwnListener({ host: '127.0.0.1', port: 0 }, tcp(4040)), false, 'port 0: whatever is free, never a probed port');
});
