/**
 * `leasehold operator --certificates external` on a real API server: the certificates another
 * keeps (cert-manager, not available here, so the test plays its part: a `kubernetes.io/tls`
 * Secret with tls.crt, tls.key and ca.crt, and the caBundle written as its cainjector would).
 * Admission works; a new certificate put into the Secret is served with every pod creation
 * around the change injected; a pair that cannot be served is not taken; and the operator writes
 * neither the Secret nor the caBundle.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import { waitFor, type Proc } from '../support/cli.js';
import { freshNamespace, kubectl } from '../support/kube.js';
import { kubectlIn, startOperatorProcess, stopOperators, webhookCaBundle, webhookConfiguration } from '../support/operator-process.js';
import { freePort } from '../support/control-plane.js';
import { issue, type KeyPair } from '../../src/operator/x509.js';

const WEBHOOK = `leasehold-operator-external-${process.pid}`;
const SECRET = 'webhook-cert';

const json = <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T;
const b64 = (text: string) => Buffer.from(text).toString('base64');

const now = Date.now();
const ca = issue({ commonName: 'test-issuer-ca', notBefore: new Date(now - 60_000), notAfter: new Date(now + 86_400_000) });
/** A serving certificate for the address the API server calls, signed by the one CA (as a CA issuer renews). */
const serving = () =>
  issue({
    commonName: '127.0.0.1',
    hosts: ['127.0.0.1'],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3_600_000),
    issuer: { ...ca, commonName: 'test-issuer-ca' },
  });

interface SecretJson {
  metadata: { resourceVersion: string };
  data: Record<string, string>;
}

describe('leasehold operator serving the certificates another keeps (--certificates external)', () => {
  let ops = '';
  let app = '';
  let port = 0;
  let operator: Proc | undefined;
  let waiting: Proc | undefined;

  /** Writes the Secret as cert-manager does (type kubernetes.io/tls); returns its resourceVersion. */
  const writeSecret = (pair: { certPem: string; keyPem: string }, verb: 'create' | 'replace') =>
    JSON.parse(
      kubectlIn(
        [verb, '-f', '-', '-o', 'json'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/tls',
          metadata: { name: SECRET, namespace: ops },
          data: { 'tls.crt': b64(pair.certPem), 'tls.key': b64(pair.keyPem), 'ca.crt': b64(ca.certPem) },
        }),
      ),
    ) as SecretJson;

  /** `leasehold operator --certificates external` on this test's webhook, rereading its Secret every second. */
  const startExternal = (identity: string, listen: number, secret: string, more: string[]) =>
    startOperatorProcess({ namespace: ops, identity, port: listen, webhook: WEBHOOK, flags: ['--certificates', 'external', '--secret', secret, ...more] });

  const createPod = (name: string): { ok: boolean; injected: boolean; out: string } => {
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: app, labels: { 'leasehold.io/inject': 'true' }, annotations: { 'leasehold.io/lease': 'ext' } },
      spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    };
    try {
      const out = kubectlIn(['create', '-f', '-', '-o', 'json'], JSON.stringify(manifest));
      const pod = JSON.parse(out) as { spec: { containers: { name: string }[] } };
      return { ok: true, injected: pod.spec.containers.some((c) => c.name === 'leasehold'), out };
    } catch (err) {
      return { ok: false, injected: false, out: String((err as { stderr?: Buffer }).stderr ?? err) };
    }
  };

  /** The fingerprint of the certificate the operator serves to a new connection. */
  const served = () =>
    new Promise<string>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        resolve(s.getPeerX509Certificate()!.fingerprint256);
        s.end();
      });
      s.on('error', reject);
    });
  const fingerprint = (pair: KeyPair) => new X509Certificate(pair.certPem).fingerprint256;
  const caBundle = () => webhookCaBundle(WEBHOOK);

  before(async () => {
    ops = await freshNamespace('opext');
    app = await freshNamespace('opextapp');
    kubectl(['create', 'serviceaccount', 'default', '-n', app]);
    port = await freePort();
    // The CA, as cert-manager's cainjector writes it from the Certificate's ca.crt.
    kubectlIn(
      ['create', '-f', '-'],
      JSON.stringify(webhookConfiguration({ name: WEBHOOK, port, failurePolicy: 'Fail', namespaces: [app], caBundle: b64(ca.certPem) })),
    );
  });

  after(() => {
    stopOperators([operator, waiting], WEBHOOK);
    for (const ns of [ops, app]) if (ns) kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
  });

  it(
    'serves the Secret, picks up a new certificate with admission working throughout, and writes neither the Secret nor the caBundle',
    {
      timeout: 120_000,
    },
    async () => {
      const first = serving();
      writeSecret(first, 'create');
      operator = startExternal('ext-0', port, SECRET, ['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '1s']);
      // The API server reads webhook configurations through its cache: wait for a first injection.
      let n = 0;
      await waitFor('a first injection', () => createPod(`probe-${n++}`).injected, 30_000, 200);
      assert.equal(await served(), fingerprint(first));
      // It leads (the reconciler runs), and still writes neither.
      await waitFor('the operator elected', () => operator!.stderr().includes('leading:'), 15_000, 100);

      const second = serving();
      const written = writeSecret(second, 'replace');
      let during = 0;
      for (const deadline = Date.now() + 30_000; ; during++) {
        const r = createPod(`swap-${during}`);
        assert.ok(r.ok && r.injected, `pod ${during} during the change: ${r.out}`);
        if ((await served()) === fingerprint(second)) break;
        assert.ok(Date.now() < deadline, 'the new certificate was not served within 30 s');
      }
      for (let i = 0; i < 3; i++) {
        const r = createPod(`after-${i}`);
        assert.ok(r.ok && r.injected, `pod after the change: ${r.out}`);
      }
      console.log(`operator (external certificates): new certificate served; ${during + 1} pods created during the change, all injected`);

      // The pass that served it would have written first (the operator's own mode writes, then
      // serves): the Secret is exactly as written, the caBundle as set.
      const secret = json<SecretJson>(['get', 'secret', SECRET, '-n', ops]);
      assert.equal(secret.metadata.resourceVersion, written.metadata.resourceVersion, 'the operator did not write the Secret');
      assert.deepEqual(Object.keys(secret.data).sort(), ['ca.crt', 'tls.crt', 'tls.key']);
      assert.equal(caBundle(), b64(ca.certPem), 'the operator did not write the caBundle');
    },
  );

  it('keeps serving the certificate it has when the Secret holds a pair that cannot be served', { timeout: 60_000 }, async () => {
    const before = await served();
    const broken = serving();
    writeSecret({ certPem: broken.certPem, keyPem: serving().keyPem }, 'replace');
    await waitFor('the refusal logged', () => operator!.stderr().includes('certificate check failed'), 15_000, 100);
    assert.equal(await served(), before);
    const r = createPod('while-broken');
    assert.ok(r.ok && r.injected, r.out);
  });

  it('says so when the Secret is absent or its certificate expired, and serves nothing without one', { timeout: 60_000 }, async () => {
    // A second operator on a Secret nobody wrote: it opens no port (admission never goes without a certificate).
    const idle = await freePort();
    waiting = startExternal('ext-waiting', idle, 'not-written-yet', ['--lease', 'ext-waiting']);
    await waitFor('the wait logged', () => waiting!.stderr().includes('waiting for the serving certificate'), 15_000, 100);
    assert.match(waiting.stderr(), new RegExp(`"secret":"${ops}/not-written-yet"`));
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port: idle, rejectUnauthorized: false }, () => resolve(false));
      s.on('error', () => resolve(true));
    });
    assert.ok(refused, 'nothing listens without a certificate');
    waiting.kill('SIGKILL');

    // An expired certificate (cert-manager stopped renewing): served as it is, and said.
    const expired = issue({
      commonName: '127.0.0.1',
      hosts: ['127.0.0.1'],
      notBefore: new Date(now - 7_200_000),
      notAfter: new Date(now - 3_600_000),
      issuer: { ...ca, commonName: 'test-issuer-ca' },
    });
    writeSecret(expired, 'replace');
    await waitFor('the expiry logged', () => operator!.stderr().includes('serving certificate expired'), 15_000, 100);
    assert.match(operator!.stderr(), new RegExp(`"notAfter":"${new Date(Math.floor((now - 3_600_000) / 1000) * 1000).toISOString()}"`));
  });
});
