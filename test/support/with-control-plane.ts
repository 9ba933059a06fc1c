/**
 * Starts a control plane, runs the command after "--" with these set, and always tears down:
 *   LEASEHOLD_TEST_KUBECONFIG             admin kubeconfig (system:masters)
 *   LEASEHOLD_TEST_RESTRICTED_KUBECONFIG  a user with no RBAC grants of its own
 *   LEASEHOLD_TEST_RESTRICTED_USER        that user's name, for RoleBindings
 *   LEASEHOLD_TEST_BIN_DIR                etcd, kube-apiserver, kubectl (and helm if built)
 *   LEASEHOLD_TEST_CONTROL_PLANE_DIR      certs, logs, kubeconfigs
 * Exits with the command's status.
 */
import { spawn } from 'node:child_process';
import { startControlPlane } from './control-plane.js';

const sep = process.argv.indexOf('--');
const cmd = sep >= 0 ? process.argv.slice(sep + 1) : [];
if (cmd.length === 0) {
  process.stderr.write('usage: with-control-plane.ts -- COMMAND [ARGS...]\n');
  process.exit(2);
}

const cp = await startControlPlane();
let stopping = false;
const teardown = async () => {
  if (stopping) return;
  stopping = true;
  await cp.stop();
};
const { NODE_TEST_CONTEXT: _, ...env } = process.env;
const child = spawn(cmd[0]!, cmd.slice(1), {
  stdio: 'inherit',
  env: {
    ...env,
    LEASEHOLD_TEST_KUBECONFIG: cp.adminKubeconfig,
    LEASEHOLD_TEST_RESTRICTED_KUBECONFIG: cp.restrictedKubeconfig,
    LEASEHOLD_TEST_RESTRICTED_USER: cp.restrictedUser,
    LEASEHOLD_TEST_BIN_DIR: cp.binDir,
    LEASEHOLD_TEST_CONTROL_PLANE_DIR: cp.dir,
    LEASEHOLD_TEST_ETCD_URL: cp.etcdUrl,
  },
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
const code: number = await new Promise((resolve) => child.once('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
await teardown();
process.exit(code);
