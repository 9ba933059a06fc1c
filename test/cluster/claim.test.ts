/**
 * The cluster's machine-wide claim (test/cluster/cluster.sh claim): a second cluster is refused
 * while the first runs, and one left behind by a run cut off before its `down` is torn down by
 * the next `up` rather than failing it. On a bridge of its own (LEASEHOLD_CLUSTER_BRIDGE), so a
 * real cluster on this machine is never touched.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../support/cli.js';

const BRIDGE = 'lh-claim-test';
const script = join(REPO, 'test/cluster/cluster.sh');
const root = mkdtempSync('/tmp/leasehold-claim-');

function cluster(cmd: 'claim' | 'down', dir: string) {
  const r = spawnSync('bash', [script, cmd, dir], { env: { ...process.env, LEASEHOLD_CLUSTER_BRIDGE: BRIDGE }, encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}
const owner = () => readFileSync(`/sys/class/net/${BRIDGE}/ifalias`, 'utf8').trim();

describe('the cluster claim', () => {
  const daemon = spawn('sleep', ['600'], { stdio: 'ignore' });
  after(() => {
    daemon.kill('SIGKILL');
    spawnSync('ip', ['link', 'delete', BRIDGE], { stdio: 'ignore' });
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses while the first cluster runs; tears down one left behind, then claims', async () => {
    const first = join(root, 'first');
    const second = join(root, 'second');
    assert.equal(cluster('claim', first).status, 0);
    assert.equal(owner(), first, "the bridge's alias names its folder");
    writeFileSync(join(first, 'pids', 'etcd'), `${daemon.pid}\n`);

    const refused = cluster('claim', second);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, new RegExp(`another cluster is up on this machine \\(bridge ${BRIDGE} exists, folder ${first}\\)`));
    assert.equal(owner(), first, 'a running cluster keeps its claim');
    assert.ok(existsSync(first));

    daemon.kill('SIGKILL');
    await new Promise((resolve) => daemon.once('exit', resolve));
    const taken = cluster('claim', second);
    assert.equal(taken.status, 0, taken.stderr);
    assert.match(taken.stderr, new RegExp(`a cluster left behind in ${first} \\(nothing of it runs\\): tearing it down first`));
    assert.equal(owner(), second);
    assert.equal(existsSync(first), false, 'the one left behind was torn down');

    assert.equal(cluster('down', second).status, 0);
    assert.equal(existsSync(`/sys/class/net/${BRIDGE}`), false, 'down removed the bridge');
  });
});
