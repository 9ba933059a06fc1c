import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { env, freshNamespace, rawLease, storeFromConfig } from '../support/kube.js';
import { kubeconfigYaml } from '../support/control-plane.js';
import { scratchDir } from '../support/scratch.js';

// The kubeconfig users other than a static token, against the real API server: client
// certificates (what kind and kubeadm write), exec credential plugins (what cloud providers
// use), and a CA that does not match (the connection must fail, never fall back to insecure).

const kubeconfig = (server: string, cluster: string[], user: string[]) => kubeconfigYaml(server, cluster, 'u', user);

describe('kubeconfig credentials on a real kube-apiserver', () => {
  const dir = scratchDir(() => []);
  let ns = '';
  let server = '';
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir.path, stdio: 'ignore' });
  before(async () => {
    ns = await freshNamespace('creds');
    server = /server: (\S+)/.exec(readFileSync(env().admin, 'utf8'))![1]!;
  });

  const record = (holder: string) => ({
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    acquireTime: new Date(),
    renewTime: new Date(),
    leaseTransitions: 1,
  });

  it('a client certificate signed by the cluster CA (files relative to the kubeconfig)', async () => {
    const ca = join(env().cpDir, 'ca');
    openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/O=system:masters/CN=cert-user']);
    openssl(['x509', '-req', '-in', 'client.csr', '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', 'client.crt', '-days', '1']);
    execFileSync('cp', [`${ca}.crt`, join(dir.path, 'cluster-ca.crt')]);
    const path = join(dir.path, 'cert.kubeconfig');
    writeFileSync(path, kubeconfig(server, ['certificate-authority: cluster-ca.crt'], ['client-certificate: client.crt', 'client-key: client.key']));
    const store = storeFromConfig({ kubeconfig: path, namespace: ns });
    await store.create('by-cert', record('cert-holder'));
    assert.equal(rawLease(ns, 'by-cert').spec.holderIdentity, 'cert-holder');
    await store.close();
  });

  it('an exec credential plugin, run once and its token reused', async () => {
    const token = readFileSync(join(env().cpDir, 'tokens.csv'), 'utf8').split('\n')[0]!.split(',')[0]!;
    const plugin = join(dir.path, 'plugin.sh');
    const runs = join(dir.path, 'plugin.runs');
    writeFileSync(
      plugin,
      `#!/bin/sh\necho run >> "${runs}"\nprintf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}' "$TOKEN"\n`,
    );
    chmodSync(plugin, 0o755);
    const ca = readFileSync(join(env().cpDir, 'ca.crt')).toString('base64');
    const path = join(dir.path, 'exec.kubeconfig');
    writeFileSync(
      path,
      kubeconfig(
        server,
        [`certificate-authority-data: ${ca}`],
        [
          'exec:',
          '  apiVersion: client.authentication.k8s.io/v1',
          `  command: ./plugin.sh`,
          '  env: [{ name: TOKEN, value: "' + token + '" }]',
          '  interactiveMode: Never',
        ],
      ),
    );
    const store = storeFromConfig({ kubeconfig: path, namespace: ns });
    const version = await store.create('by-exec', record('exec-holder'));
    await store.update('by-exec', record('exec-holder-2'), version);
    assert.equal(rawLease(ns, 'by-exec').spec.holderIdentity, 'exec-holder-2');
    assert.equal(readFileSync(runs, 'utf8').trim().split('\n').length, 1, 'the token was cached, not fetched per request');
    await store.close();
  });

  it('a CA that did not sign the server certificate is a misconfiguration, not an outage, with the reason', async () => {
    openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '1', '-subj', '/CN=other-ca']);
    const path = join(dir.path, 'wrong-ca.kubeconfig');
    writeFileSync(path, kubeconfig(server, ['certificate-authority: other-ca.crt'], ['token: irrelevant']));
    const store = storeFromConfig({ kubeconfig: path, namespace: ns });
    await assert.rejects(store.get('x'), (err: Error & { code: string }) => {
      assert.equal(err.code, 'LEASEHOLD_ERR_STORE_OPEN');
      assert.match(err.message, /certificate was refused .*check the kubeconfig's certificate-authority/i);
      return true;
    });
    await store.close();
  });
});
