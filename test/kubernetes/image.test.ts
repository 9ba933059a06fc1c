/**
 * The image as it ships: built from the repository's Dockerfile (test/image/build-image.sh, on
 * a local Node base of the Dockerfile's Node version), run by a private Docker daemon with
 * the image's own entrypoint and flags, as the chart runs it: non-root, read-only root
 * filesystem, the status volume the only writable place. The Kubernetes backend's first
 * request is where Node 22 with --jitless crashed; this runs it against the tier's API server.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { REPO, waitFor } from '../support/cli.js';
import { env, freshNamespace } from '../support/kube.js';

const DOCKER = '/usr/bin/docker';
const SECURE = ['--read-only', '--user', '1000:1000', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges'];

describe('the image built from the Dockerfile, run as the chart runs it', () => {
  let work = '';
  let dockerHost = '';
  const docker = (args: string[], timeout = 60_000) => {
    const r = spawnSync(DOCKER, args, { env: { ...process.env, DOCKER_HOST: dockerHost }, encoding: 'utf8', timeout });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const started: string[] = [];

  before(() => {
    const image = execFileSync('bash', [join(REPO, 'test/image/build-image.sh')], { stdio: ['ignore', 'pipe', 'inherit'], timeout: 1_200_000 })
      .toString()
      .trim()
      .split('\n')
      .at(-1)!;
    work = mkdtempSync('/tmp/leasehold-image-test-');
    dockerHost = execFileSync('bash', [join(REPO, 'test/image/dockerd.sh'), 'start', join(work, 'docker')])
      .toString()
      .trim();
    const load = docker(['load', '-i', image], 300_000);
    assert.equal(load.code, 0, load.err);
  });

  after(() => {
    for (const id of started) docker(['rm', '-f', id]);
    if (work) execFileSync('bash', [join(REPO, 'test/image/dockerd.sh'), 'stop', join(work, 'docker')]);
    if (work) execFileSync('rm', ['-rf', work]);
  });

  it('ships the Node version the Dockerfile names, and its entrypoint flags work on it', () => {
    const wanted = /^ARG NODE_IMAGE=node:([0-9.]+)-/m.exec(readFileSync(join(REPO, 'Dockerfile'), 'utf8'))![1];
    const node = docker(['run', '--rm', '--network', 'none', ...SECURE, '--entrypoint', 'node', 'leasehold:dev', '--version']);
    assert.equal(node.out.trim(), `v${wanted}`, node.err);
    const help = docker(['run', '--rm', '--network', 'none', ...SECURE, 'leasehold:dev', '--help']);
    assert.equal(help.code, 0, help.err);
    assert.match(help.out, /^leasehold <command> \[flags\]\n[\s\S]*\n {2}sidecar {2}/);
    const user = docker(['run', '--rm', '--network', 'none', '--entrypoint', 'id', 'leasehold:dev', '-u']);
    assert.equal(user.out.trim(), '1000', 'the image runs as uid 1000 by default');
  });

  it('leads on the Kubernetes backend from inside the image, then releases on SIGTERM', { timeout: 180_000 }, async () => {
    const ns = await freshNamespace('image');
    // The admin kubeconfig names 127.0.0.1: the container shares the host's network namespace.
    const kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, readFileSync(env().admin));
    chmodSync(kubeconfig, 0o644);
    const run = docker([
      'run',
      '-d',
      '--network',
      'host',
      ...SECURE,
      '--tmpfs',
      '/leader:uid=1000,gid=1000,mode=0755',
      '-v',
      `${kubeconfig}:/kube/config:ro`,
      'leasehold:dev',
      'sidecar',
      '--backend',
      'kubernetes',
      '--kubeconfig',
      '/kube/config',
      '--namespace',
      ns,
      '--lease',
      'image-check',
      '--identity',
      'in-the-image',
      '--status-dir',
      '/leader',
      '--listen',
      'off',
      '--lease-duration',
      '3s',
      '--renew-deadline',
      '2s',
      '--retry-period',
      '500ms',
    ]);
    assert.equal(run.code, 0, run.err);
    const id = run.out.trim();
    started.push(id);
    const logs = () => {
      const l = docker(['logs', id]);
      return l.out + l.err;
    };
    await waitFor('"became leader" from the container', () => logs().includes('"became leader"'), 60_000, 200).catch((e: Error) => {
      throw new Error(`${e.message}\n${logs()}`);
    });
    const status = docker(['exec', id, 'cat', '/leader/is-leader']);
    assert.equal(status.out, 'true\n', 'the status volume says leader');
    const stop = docker(['stop', '--time', '10', id]);
    assert.equal(stop.code, 0, stop.err);
    assert.match(logs(), /"released lease"/);
    assert.doesNotMatch(logs(), /WebAssembly|ReferenceError/);
  });

  it('local mode in the image: nothing written outside its volumes', { timeout: 120_000 }, async () => {
    const run = docker([
      'run',
      '-d',
      '--network',
      'none',
      ...SECURE,
      '--tmpfs',
      '/leader:uid=1000,gid=1000,mode=0755',
      // The database has a volume of its own: one inside the status directory is refused.
      '--tmpfs',
      '/data:uid=1000,gid=1000,mode=0700',
      'leasehold:dev',
      'sidecar',
      '--db',
      '/data/leases.db',
      '--status-dir',
      '/leader',
      '--listen',
      '127.0.0.1:4040',
      '--lease-duration',
      '2s',
      '--renew-deadline',
      '1500ms',
      '--retry-period',
      '400ms',
    ]);
    assert.equal(run.code, 0, run.err);
    const id = run.out.trim();
    started.push(id);
    await waitFor('leadership', () => docker(['exec', id, 'cat', '/leader/is-leader']).out === 'true\n', 60_000, 200);
    // The root filesystem is read-only, and nothing but the mount points of the volumes differs.
    const diff = docker(['diff', id])
      .out.trim()
      .split('\n')
      .filter((l) => l && l !== 'A /leader' && l !== 'A /data');
    assert.deepEqual(diff, [], 'the root filesystem is unchanged');
    const write = docker(['exec', id, 'node', '-e', 'require("fs").writeFileSync("/app/x", "")']);
    assert.notEqual(write.code, 0, 'the root filesystem refuses writes');
    assert.match(write.err, /EROFS|read-only/);
    docker(['stop', '--time', '10', id]);
  });
});
