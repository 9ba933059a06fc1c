import { strict as assert } from 'node:assert';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { TOKEN_FILE_REREAD_MS, execPlugin, tokenFile } from './credentials.js';
import { inCluster, loadConnection } from './kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** A kubeconfig with one context; `user` and `cluster` are YAML lines under their maps. */
function config(
  opts: { cluster?: string[]; user?: string[]; context?: string; current?: string; namespace?: string; clusterName?: string; userName?: string } = {},
): string {
  const clusterName = opts.clusterName ?? 'c';
  const userName = opts.userName ?? 'u';
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${clusterName}`,
    '  cluster:',
    ...(opts.cluster ?? ['server: https://127.0.0.1:6443']).map((l) => `    ${l}`),
    'users:',
    `- name: ${userName}`,
    '  user:',
    ...(opts.user ?? ['token: abc']).map((l) => `    ${l}`),
    'contexts:',
    `- name: ${opts.context ?? 'ctx'}`,
    '  context:',
    `    cluster: ${clusterName}`,
    `    user: ${userName}`,
    ...(opts.namespace ? [`    namespace: ${opts.namespace}`] : []),
    `current-context: ${opts.current ?? 'ctx'}`,
    '',
  ].join('\n');
}

const noEnv = { HOME: dir } as NodeJS.ProcessEnv;

describe('loadConnection', () => {
  test('a token user with inline CA data and a context namespace', async () => {
    const ca = Buffer.from('-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n');
    const path = write(
      `k${seq++}`,
      config({
        cluster: ['server: https://10.0.0.1:6443/', `certificate-authority-data: ${ca.toString('base64')}`, 'tls-server-name: api.internal'],
        namespace: 'jobs',
      }),
    );
    const conn = loadConnection(path, noEnv);
    assert.equal(conn.server, 'https://10.0.0.1:6443', 'trailing slash removed');
    assert.deepEqual(conn.ca, ca);
    assert.equal(conn.tlsServerName, 'api.internal');
    assert.equal(conn.namespace, 'jobs');
    assert.equal(await conn.credentials?.header(), 'Bearer abc');
    assert.match(conn.source, /context ctx/);
  });

  test('certificate files are read relative to the kubeconfig, not the working directory', () => {
    const sub = join(dir, `certs${seq++}`);
    mkdirSync(join(sub, 'pki'), { recursive: true });
    writeFileSync(join(sub, 'pki', 'client.crt'), 'CERT');
    writeFileSync(join(sub, 'pki', 'client.key'), 'KEY');
    writeFileSync(join(sub, 'pki', 'ca.crt'), 'CA');
    writeFileSync(
      join(sub, 'config'),
      config({
        cluster: ['server: https://h:1', 'certificate-authority: pki/ca.crt'],
        user: ['client-certificate: pki/client.crt', 'client-key: pki/client.key'],
      }),
    );
    const conn = loadConnection(join(sub, 'config'), noEnv);
    assert.equal(conn.cert?.toString(), 'CERT');
    assert.equal(conn.key?.toString(), 'KEY');
    assert.equal(conn.ca?.toString(), 'CA');
    assert.equal(conn.credentials, undefined, 'a certificate user sends no Authorization header');
  });

  test('username and password become basic auth', async () => {
    const conn = loadConnection(write(`k${seq++}`, config({ user: ['username: ann', 'password: s3cret'] })), noEnv);
    assert.equal(await conn.credentials?.header(), `Basic ${Buffer.from('ann:s3cret').toString('base64')}`);
  });

  test('$KUBECONFIG files merge with the first file winning, as kubectl does', async () => {
    const first = write(`k${seq++}`, config({ current: 'ctx', user: ['token: first'] }));
    // The second file defines the same user (ignored) and a different current-context (ignored).
    const second = write(`k${seq++}`, config({ context: 'other', current: 'other', user: ['token: second'] }));
    const conn = loadConnection(undefined, { ...noEnv, KUBECONFIG: `${join(dir, 'missing')}:${first}:${second}` });
    assert.equal(await conn.credentials?.header(), 'Bearer first');
    assert.match(conn.source, /context ctx/);
  });

  test('~/.kube/config is used when nothing else is given', () => {
    const home = join(dir, `home${seq++}`);
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), config({ cluster: ['server: https://home:6443'] }));
    assert.equal(loadConnection(undefined, { HOME: home }).server, 'https://home:6443');
  });

  const refusals: Array<{ name: string; text?: string; env?: NodeJS.ProcessEnv; error: RegExp }> = [
    { name: 'no current-context', text: 'apiVersion: v1\nkind: Config\n', error: /has no current-context/ },
    { name: 'current-context not defined', text: config({ current: 'nope' }), error: /current-context "nope" is not among its contexts/ },
    { name: 'server without a scheme', text: config({ cluster: ['server: 10.0.0.1:6443'] }), error: /needs a server URL starting with https:\/\// },
    {
      name: 'legacy auth-provider',
      text: config({ user: ['auth-provider:', '  name: gcp'] }),
      error: /auth-provider "gcp", which leasehold does not support: use an exec credential plugin/,
    },
    {
      name: 'proxy-url',
      text: config({ cluster: ['server: https://h:1', 'proxy-url: http://proxy:3128'] }),
      error: /proxy-url, which leasehold does not support/,
    },
    { name: 'certificate without key', text: config({ user: ['client-certificate-data: Q0VSVA=='] }), error: /client certificate without its key/ },
    {
      name: 'CA file missing',
      text: config({ cluster: ['server: https://h:1', 'certificate-authority: nowhere.crt'] }),
      error: /cannot read certificate-authority .*nowhere\.crt/,
    },
    { name: 'not YAML', text: 'clusters: [\n', error: /is not valid YAML/ },
    { name: 'a YAML list', text: '- a\n- b\n', error: /is not a mapping/ },
    { name: 'KUBECONFIG names no file', env: { HOME: dir, KUBECONFIG: join(dir, 'none-1') }, error: /KUBECONFIG names no existing file/ },
    { name: 'nothing configured', env: { HOME: join(dir, 'empty-home') }, error: /no Kubernetes cluster configured: give a kubeconfig file/ },
    { name: 'impersonation (as)', text: config({ user: ['token: abc', 'as: admin'] }), error: /sets as \(impersonation\), which leasehold does not support/ },
    {
      name: 'impersonation (as-groups, as-uid)',
      text: config({ user: ['token: abc', 'as-groups: [system:masters]', 'as-uid: "1"'] }),
      error: /sets as-uid, as-groups \(impersonation\)/,
    },
    {
      name: 'a bearer token over http://',
      text: config({ cluster: ['server: http://127.0.0.1:8080'] }),
      error: /plain http:\/\/ but user "u" has credentials, which would cross the network unencrypted/,
    },
    {
      name: 'a missing exec plugin',
      text: config({ user: ['exec:', '  apiVersion: client.authentication.k8s.io/v1', '  command: leasehold-no-such-plugin'] }),
      error: /exec credential plugin leasehold-no-such-plugin not found in PATH/,
    },
  ];
  for (const c of refusals) {
    test(`refuses: ${c.name}`, () => {
      const path = c.text === undefined ? undefined : write(`k${seq++}`, c.text);
      assert.throws(
        () => loadConnection(path, c.env ?? noEnv),
        (err: Error & { code?: string }) => c.error.test(err.message) && err.code === 'LEASEHOLD_ERR_STORE_OPEN',
      );
    });
  }
});

describe('in-cluster service account', () => {
  test('builds the server from the service env and reads token, CA and namespace', async () => {
    const sa = join(dir, `sa${seq++}`);
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), 'tok-1\n');
    writeFileSync(join(sa, 'ca.crt'), 'CA');
    writeFileSync(join(sa, 'namespace'), 'payments\n');
    const conn = inCluster({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, sa);
    assert.equal(conn.server, 'https://[fd00::1]:443', 'IPv6 hosts are bracketed');
    assert.equal(conn.namespace, 'payments');
    assert.equal(conn.ca?.toString(), 'CA');
    assert.equal(await conn.credentials?.header(), 'Bearer tok-1');
  });

  test('refuses when the token is not mounted', () => {
    assert.throws(
      () => inCluster({ KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' }, join(dir, 'no-sa')),
      /token does not exist \(is automountServiceAccountToken disabled\?\)/,
    );
  });
});

describe('credentials', () => {
  test('a token file is re-read after a minute and after invalidate(), not before', async () => {
    const path = write(`token${seq++}`, 'one');
    let now = 0;
    const source = tokenFile(path, () => now);
    assert.equal(await source.header(), 'Bearer one');
    writeFileSync(path, 'two');
    now = TOKEN_FILE_REREAD_MS - 1;
    assert.equal(await source.header(), 'Bearer one', 'cached within the minute');
    now = TOKEN_FILE_REREAD_MS;
    assert.equal(await source.header(), 'Bearer two', 'rotated token picked up');
    writeFileSync(path, 'three');
    source.invalidate();
    assert.equal(await source.header(), 'Bearer three', 'a 401 forces a re-read');
  });

  test('an exec plugin runs once per token lifetime, sees KUBERNETES_EXEC_INFO and its env, and reruns after invalidate()', async () => {
    const plugin = join(dir, `plugin${seq++}`);
    const runs = `${plugin}.runs`;
    const seen = `${plugin}.info`;
    writeFileSync(
      plugin,
      [
        '#!/bin/sh',
        `echo run >> "${runs}"`,
        `printf '%s|%s' "$KUBERNETES_EXEC_INFO" "$EXTRA" > "${seen}"`,
        `n=$(wc -l < "${runs}")`,
        'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t%s","expirationTimestamp":"2030-01-01T00:00:00Z"}}\' $n',
        '',
      ].join('\n'),
    );
    chmodSync(plugin, 0o755);
    let now = Date.parse('2029-12-31T23:00:00Z');
    const source = execPlugin({ command: plugin, args: [], env: [{ name: 'EXTRA', value: 'x1' }] }, dir, 'test', () => now);
    const [a, b] = await Promise.all([source.header(), source.header()]);
    assert.equal(a, 'Bearer t1');
    assert.equal(b, 'Bearer t1', 'concurrent callers share one run');
    assert.equal(await source.header(), 'Bearer t1', 'cached until expiry');
    assert.equal(readFileSync(runs, 'utf8').trim().split('\n').length, 1);
    const [info, extra] = readFileSync(seen, 'utf8').split('|');
    assert.deepEqual(JSON.parse(info!), { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } });
    assert.equal(extra, 'x1');
    now = Date.parse('2029-12-31T23:59:55Z'); // within the 10 s refresh margin
    assert.equal(await source.header(), 'Bearer t2');
    source.invalidate();
    assert.equal(await source.header(), 'Bearer t3');
  });

  test('exec plugin failures say which plugin and why', async () => {
    assert.throws(
      () => execPlugin({ command: 'leasehold-no-such-plugin', installHint: 'install it from the vendor' }, dir, 'test'),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN', 'a missing plugin is a configuration error, found at start');
        assert.match(err.message, /exec credential plugin leasehold-no-such-plugin not found in PATH \(install it from the vendor\)/);
        return true;
      },
    );
    const garbage = write(`garbage${seq++}`, '#!/bin/sh\necho hello\n');
    chmodSync(garbage, 0o755);
    await assert.rejects(execPlugin({ command: garbage }, dir, 'test').header(), /did not print an ExecCredential/);
    const certs = write(`certs${seq++}`, '#!/bin/sh\necho \'{"status":{"clientCertificateData":"x"}}\'\n');
    chmodSync(certs, 0o755);
    await assert.rejects(execPlugin({ command: certs }, dir, 'test').header(), /returned a client certificate, which leasehold does not support/);
    assert.throws(() => execPlugin({}, dir, 'user "u"'), /user "u": exec needs a command/);
  });

  test('a failing plugin with nothing on stderr never shows its arguments (they can be secrets)', async () => {
    const quiet = write(`quiet${seq++}`, '#!/bin/sh\nexit 3\n');
    chmodSync(quiet, 0o755);
    const source = execPlugin({ command: quiet, args: ['--client-secret', 's3cr3t-value'] }, dir, 'test');
    await assert.rejects(source.header(), (err: Error) => {
      assert.doesNotMatch(err.message, /s3cr3t/);
      assert.match(err.message, /failed: exited with status 3$/);
      return true;
    });
  });

  test('provideClusterInfo hands the plugin the cluster; interactiveMode Always is refused', async () => {
    const plugin = write(`info${seq++}`, `#!/bin/sh\nprintf '%s' "$KUBERNETES_EXEC_INFO" > "$0.info"\necho '{"status":{"token":"t"}}'\n`);
    chmodSync(plugin, 0o755);
    const cluster = { server: 'https://10.0.0.1:6443', 'certificate-authority-data': 'Q0E=', config: { audience: 'x' } };
    await execPlugin({ command: plugin, provideClusterInfo: true }, dir, 'test', Date.now, cluster).header();
    assert.deepEqual((JSON.parse(readFileSync(`${plugin}.info`, 'utf8')) as { spec: unknown }).spec, { interactive: false, cluster });
    assert.throws(() => execPlugin({ command: plugin, interactiveMode: 'Always' }, dir, 'user "u"'), /interactiveMode: Always, but a sidecar has no terminal/);
  });
});
