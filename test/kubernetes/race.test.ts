import { describe, it, before } from 'node:test';
import { raceRounds } from '../support/race.js';
import { env, freshNamespace, storeFor } from '../support/kube.js';

const ROUNDS = 12;

describe('6 real processes race for an absent Lease on a real API server', () => {
  let ns = '';
  before(async () => {
    ns = await freshNamespace('race');
  });

  it(`exactly one wins, in each of ${ROUNDS} rounds, with token 1`, { timeout: 300_000 }, async () => {
    const lease = (round: number) => `race-${round}`;
    const winners = await raceRounds(
      6,
      ROUNDS,
      (round) => ({ backend: 'kubernetes', db: '', kubeconfig: env().admin, namespace: ns, lease: lease(round) }),
      async (round) => (await storeFor(ns).get(lease(round)))?.record.holderIdentity,
    );
    console.log(`winners over ${ROUNDS} rounds: ${JSON.stringify(Object.fromEntries(winners))}`);
  });
});
