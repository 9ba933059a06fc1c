/**
 * The operator's mark key lost on a real node (issue 36): the Secret of its keys deleted while
 * no replica runs, then the operator back with a new key. The injected Deployment's pods keep
 * their Role and RoleBinding (same uids), are told so by an Event, and their leader keeps
 * renewing; a rollout then signs the new pods with the new key. Registered inside the operator's
 * checks (operator-checks.ts), on the same bring-up and release.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../support/cli.js';
import { grantUids, renewals, type OperatorCheckContext } from './operator-context.js';

interface Named {
  metadata: { name: string; uid: string };
}

export function markKeyChecks(ctx: OperatorCheckContext): void {
  it(
    "the mark key's Secret deleted while no replica runs: a new key, the injected pods keep their grants (same uids) and their leader renews, and a rollout signs them anew",
    { timeout: 420_000 },
    async () => {
      const { op, kubectl } = ctx;
      const secret = `${ctx.release}-mark`;
      const key = () => (JSON.parse(op('get', 'secret', secret, '-o', 'json')) as { data: Record<string, string> }).data['mark.key'];
      const { leader } = await ctx.agreed(120_000);
      const oldKey = key();
      const before = grantUids(ctx, ctx.installation);
      assert.ok(Object.keys(before).length >= 2, `no grant of ${ctx.installation}: ${JSON.stringify(before)}`);
      const pods = (JSON.parse(kubectl('get', 'pods', '-l', `app.kubernetes.io/instance=${ctx.app}`, '-o', 'json')) as { items: Named[] }).items;

      // No replica left to remember the key: it is lost with the Secret.
      op('scale', `deployment/${ctx.release}`, '--replicas=0');
      try {
        await waitFor(
          'no operator replica left',
          () => op('get', 'pods', '-l', 'app.kubernetes.io/name=leasehold-operator', '-o', 'name').trim() === '',
          120_000,
          250,
        );
        op('delete', 'secret', secret);
      } finally {
        op('scale', `deployment/${ctx.release}`, '--replicas=2');
      }
      const back = Date.now();
      await waitFor('a new key', () => ctx.run(['-n', ctx.operatorNamespace, 'get', 'secret', secret]).status === 0 && key() !== oldKey, 120_000, 500);
      // The Event comes after the pass's removals: once there for every pod, that pass has kept the grants.
      const kept = (uid: string) =>
        kubectl('get', 'events', `--field-selector=involvedObject.uid=${uid},reason=LeaseholdGrantKept`, '-o', 'name').trim() !== '';
      await waitFor('LeaseholdGrantKept on every injected pod', () => pods.every((p) => kept(p.metadata.uid)), 120_000, 500);
      const eventMs = Date.now() - back;
      assert.deepEqual(grantUids(ctx, ctx.installation), before, 'the same Roles and RoleBindings');
      const refused = kubectl('get', 'events', '--field-selector=reason=LeaseholdNotGranted', '-o', 'name').trim();
      assert.equal(refused, '', 'no injected pod reported as not granted');
      // The attacker's round saw no renewal for 92 s: the leader must keep renewing, in the same term.
      const renewedMs = await renewals(ctx, ctx.app, leader, 3);
      assert.equal((await ctx.agreed(60_000)).leader, leader);
      console.log(
        `cluster/operator: mark key lost with every replica down: grants kept (Event on ${pods.length} pods ${eventMs} ms after the scale back), ${leader} renewed 3 times within ${renewedMs} ms`,
      );

      // New pods: injected with the new key, granted by it (the same pair: the same grant).
      kubectl('rollout', 'restart', `deployment/${ctx.app}`);
      kubectl('rollout', 'status', `deployment/${ctx.app}`, '--timeout=240s');
      await ctx.agreed(120_000);
      assert.deepEqual(grantUids(ctx, ctx.installation), before, 'still the same grant');
    },
  );
}
