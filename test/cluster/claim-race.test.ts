/**
 * The claim beside a `down` still running, and with a relative folder. A cluster whose `down`
 * runs has no daemon left (their pid files go before its bridge does): were it taken for one
 * left behind, a second claim would tear it down again and make the bridge anew, and the first
 * `down` would then delete the new owner's bridge. `down` records its own pid, so the claim is
 * refused until it is over.
 *
 * The window is widened deterministically by an `ip` wrapper on PATH that sleeps before the
 * first `ip link delete` only (the first `down`'s). Bridge of its own, no daemons, no netns,
 * no mounts: nothing of a real cluster is touched.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../support/cli.js';

const BRIDGE = 'lh-claim-race';
const script = join(REPO, 'test/cluster/cluster.sh');
const root = mkdtempSync('/tmp/leasehold-claim-race-');
const shim = join(root, 'bin');
const mark = join(root, 'first-delete');
const realIp = spawnSync('bash', ['-c', 'command -v ip'], { encoding: 'utf8' }).stdout.trim();
mkdirSync(shim);
writeFileSync(join(shim, 'ip'), `#!/bin/bash\nif [[ "$1 $2" == "link delete" && ! -e '${mark}' ]]; then touch '${mark}'; sleep 3; fi\nexec '${realIp}' "$@"\n`);
chmodSync(join(shim, 'ip'), 0o755);
const env = { ...process.env, LEASEHOLD_CLUSTER_BRIDGE: BRIDGE, PATH: `${shim}:${process.env.PATH}` };

const owner = () => readFileSync(`/sys/class/net/${BRIDGE}/ifalias`, 'utf8').trim();

describe('the cluster claim beside a down that is still running', () => {
  after(() => {
    spawnSync('ip', ['link', 'delete', BRIDGE], { stdio: 'ignore' });
    rmSync(root, { recursive: true, force: true });
  });

  it("a claim made while the first cluster's down runs keeps its bridge", async () => {
    const first = join(root, 'first');
    const second = join(root, 'second');
    assert.equal(spawnSync('bash', [script, 'claim', first], { env, encoding: 'utf8' }).status, 0);
    assert.equal(owner(), first);

    // The first cluster's own down: its daemons are gone (stop_pid removed their files); it is
    // now between its network.owned check and `ip link delete`.
    const down = spawn('bash', [script, 'down', first], { env, stdio: 'ignore' });
    const downExit = new Promise((resolve) => down.once('exit', resolve));
    for (let i = 0; i < 100 && !existsSync(mark); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(mark), "the first down reached 'ip link delete'");

    const refused = spawnSync('bash', [script, 'claim', second], { env, encoding: 'utf8' });
    assert.equal(refused.status, 1, `claimed beside the first's down: ${refused.stderr.trim()}`);
    assert.match(refused.stderr, /another cluster is up on this machine/);
    await downExit;
    assert.equal(existsSync(first), false, "the first's down finished");
    const taken = spawnSync('bash', [script, 'claim', second], { env, encoding: 'utf8' });
    assert.equal(taken.status, 0, taken.stderr);
    assert.equal(owner(), second);
    assert.equal(spawnSync('bash', [script, 'down', second], { env, encoding: 'utf8' }).status, 0);
  });

  it('a cluster claimed with a relative folder, left behind, is torn down by a claim made elsewhere', () => {
    spawnSync('ip', ['link', 'delete', BRIDGE], { stdio: 'ignore' });
    const plain = { ...env, PATH: process.env.PATH };
    // The alias is "$dir" as given: relative here, so it names a folder only from the claimer's cwd.
    assert.equal(spawnSync('bash', [script, 'claim', 'rel-first'], { env: plain, cwd: root, encoding: 'utf8' }).status, 0);
    const taken = spawnSync('bash', [script, 'claim', join(root, 'abs-second')], { env: plain, cwd: '/', encoding: 'utf8' });
    assert.equal(taken.status, 0, `nothing of rel-first runs, yet: ${taken.stderr.trim()}`);
    assert.match(taken.stderr, new RegExp(`a cluster left behind in ${join(root, 'rel-first')} `), 'the alias named the folder by its absolute path');
    assert.equal(spawnSync('bash', [script, 'down', join(root, 'abs-second')], { env: plain, encoding: 'utf8' }).status, 0);
  });

  it('a bridge that names no folder, or one that is gone, is refused with what to do; up refuses another bridge name', () => {
    const plain = { ...env, PATH: process.env.PATH };
    assert.equal(spawnSync('ip', ['link', 'add', BRIDGE, 'type', 'bridge']).status, 0);
    const unnamed = spawnSync('bash', [script, 'claim', join(root, 'third')], { env: plain, encoding: 'utf8' });
    assert.equal(unnamed.status, 1);
    assert.match(unnamed.stderr, new RegExp(`bridge ${BRIDGE} exists and names no folder .*remove it \\('ip link delete ${BRIDGE}'\\)`));
    assert.equal(spawnSync('ip', ['link', 'set', 'dev', BRIDGE, 'alias', join(root, 'gone')]).status, 0);
    const gone = spawnSync('bash', [script, 'claim', join(root, 'fourth')], { env: plain, encoding: 'utf8' });
    assert.equal(gone.status, 1);
    assert.match(gone.stderr, new RegExp(`names ${join(root, 'gone')}, which is gone`));
    assert.equal(owner(), join(root, 'gone'), 'a refused claim changes nothing');
    const up = spawnSync('bash', [script, 'up', join(root, 'fifth')], { env: plain, encoding: 'utf8' });
    assert.equal(up.status, 2);
    assert.match(up.stderr, /LEASEHOLD_CLUSTER_BRIDGE is for 'cluster.sh claim' only/);
    assert.equal(existsSync(join(root, 'fifth')), false);
  });
});
