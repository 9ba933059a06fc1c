import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { buildTool } from './build-tool.js';
import { REPO } from './cli.js';

// A cold clone's CI once went red because the client-go peer was built inside a test's 60 s
// timeout; only a machine without the cache showed it. These checks fail on a warm machine too.
describe('tools are built before any test starts its clock', () => {
  test('buildTool refuses a script the tools step did not run, before running anything', () => {
    assert.throws(
      () => buildTool('build-go-candidate.sh', [], { ...process.env, LEASEHOLD_TOOLS_PREBUILT: 'build-control-plane.sh build-helm.sh' }),
      /build-go-candidate\.sh was not run by the tools step \(it ran: build-control-plane\.sh build-helm\.sh\); add it to test\/support\/build-test-tools\.sh/,
    );
  });

  test('a build script refuses to start a build once the tools step has run', () => {
    const r = spawnSync('bash', [join(REPO, 'test/support/build-helm.sh')], {
      encoding: 'utf8',
      env: { ...process.env, LEASEHOLD_TOOLS_PREBUILT: 'build-helm.sh', LEASEHOLD_HELM_VERSION: '0.0.0-never-cached', LEASEHOLD_HELM: '' },
    });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /\[helm\] not in the cache, and the tools step has run: build it in test\/support\/build-test-tools\.sh/);
  });

  test('every tool a test or the cluster uses is in the tools step', () => {
    const step = readFileSync(join(REPO, 'test/support/build-test-tools.sh'), 'utf8');
    const used = new Set<string>();
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.(ts|sh)$/.test(name) && !name.startsWith('build-')) {
          for (const m of readFileSync(path, 'utf8').matchAll(/(build-[a-z-]+\.sh)/g)) used.add(`${relative(REPO, dir)}: ${m[1]}`);
        }
      }
    };
    walk(join(REPO, 'test'));
    const missing = [...used].filter((u) => !u.endsWith('build-test-tools.sh') && !step.includes(u.split(': ')[1]!));
    assert.deepEqual(missing, []);
  });
});
