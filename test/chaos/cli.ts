/**
 * npm run chaos [-- --seed N] [--seconds S] [--backend sqlite|kubernetes|both]
 * Runs the chaos driver (test/chaos/run-chaos.ts) and prints its report; exits 1 on any
 * violation. A failing seed is printed and can be replayed with --seed.
 */
import { join } from 'node:path';
import { option } from '../../bench/cli-args.js';
import { tempDir } from '../helpers/cli.js';
import { startControlPlane } from '../env/control-plane.js';
import { formatReport, runChaos, type ChaosReport } from './run-chaos.js';

const seed = Number(option('seed', String(Date.now() % 1_000_000)));
const seconds = Number(option('seconds', '120'));
const which = option('backend', 'both');
const say = (l: string) => process.stderr.write(`[chaos] ${l}\n`);
const reports: ChaosReport[] = [];

if (which === 'sqlite' || which === 'both') {
  const dir = tempDir('leasehold-chaos-');
  try {
    say(`sqlite: seed ${seed}, ${seconds} s`);
    reports.push(await runChaos({ backend: 'sqlite', backendArgs: ['--db', join(dir.path, 'leases.db'), '--lease', 'chaos'], dir: dir.path, seed, seconds, log: say }));
  } finally {
    dir.cleanup();
  }
}
if (which === 'kubernetes' || which === 'both') {
  const dir = tempDir('leasehold-chaos-');
  const cp = await startControlPlane();
  try {
    say(`kubernetes: seed ${seed}, ${seconds} s`);
    const backendArgs = ['--backend', 'kubernetes', '--kubeconfig', cp.adminKubeconfig, '--namespace', 'default', '--lease', 'chaos'];
    reports.push(await runChaos({ backend: 'kubernetes', backendArgs, dir: dir.path, seed, seconds, apiServer: { stop: cp.stopApiServer, start: cp.startApiServer }, etcd: { stop: cp.stopEtcd, start: cp.startEtcd }, log: say }));
  } finally {
    await cp.stop();
    dir.cleanup();
  }
}
for (const r of reports) console.log(formatReport(r));
process.exit(reports.some((r) => r.violations.length > 0) ? 1 : 0);
