import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { HANDOFF_GOAL_NOTE, handoffGoalRows, handoffGoalsMarkdown, type Figures, type HandoffGoalInputs } from './handoff-goals.js';

const f = (p95: number, samples: number[] = [p95]): Figures => ({ p95, samples });
const store = (term: number, term3: number, after: number) => ({ term: f(term), term3: f(term3), afterExpiry: f(after) });

function inputs(over: Partial<HandoffGoalInputs> = {}): HandoffGoalInputs {
  return {
    sqlite: store(50, 51, 30),
    postgres: store(40, 45, 20),
    kube: {
      latency: {
        'leasehold SIGTERM': f(120),
        'leasehold SIGTERM, 3 candidates': f(110),
        'client-go SIGTERM': f(1700),
        'client-go to leasehold SIGTERM': f(150),
      },
      afterExpiry: { leasehold: f(50), 'leasehold self': f(56), 'client-go': f(2800) },
    },
    scale: [
      { setup: 'SQLite, leasehold', standbyPerMin: 0, conflicts: f(2, [0, 1, 4]), handoff: f(70), afterExpiry: f(26) },
      { setup: 'Kubernetes, leasehold', standbyPerMin: 100, conflicts: f(1, [0, 3]), handoff: f(98), afterExpiry: f(35) },
      { setup: 'Kubernetes, client-go', standbyPerMin: 3700, conflicts: f(1, [1]), handoff: f(29), afterExpiry: f(331) },
    ],
    standbys: 100,
    ...over,
  };
}

const row = (rows: ReturnType<typeof handoffGoalRows>, goal: string, store: string) => {
  const r = rows.find((x) => x.goal.startsWith(goal) && x.store.startsWith(store));
  assert.ok(r, `${goal} on ${store}`);
  return r;
};

describe('handoff goals', () => {
  it('judges every graceful handoff, size and store against p95 ≤ 50 ms, the limit included', () => {
    const rows = handoffGoalRows(inputs());
    assert.equal(row(rows, 'graceful handoff (SIGTERM), 2 candidates', 'SQLite').verdict, 'met');
    assert.equal(row(rows, 'graceful handoff (SIGTERM), 3 candidates', 'SQLite').verdict, 'not met');
    assert.equal(row(rows, 'graceful handoff (SIGTERM), 3 candidates', 'PostgreSQL').verdict, 'met');
    const k3 = row(rows, 'graceful handoff (SIGTERM), 3 candidates', 'Kubernetes');
    assert.deepEqual([k3.leasehold, k3.verdict, k3.handoff], ['110 ms', 'not met', true]);
    const k2 = row(rows, 'graceful handoff (SIGTERM), 2 candidates', 'Kubernetes');
    assert.equal(k2.clientGo, '1700 ms');
    const mixed = row(rows, 'graceful handoff (SIGTERM), a client-go leader to a leasehold standby', 'Kubernetes');
    assert.deepEqual([mixed.leasehold, mixed.verdict], ['150 ms', 'not met']);
  });

  it('judges conflicts on the worst handoff and failover after the expiry per store and size', () => {
    const rows = handoffGoalRows(inputs());
    const c = (s: string) => row(rows, 'conflicting writes per handoff', s);
    assert.deepEqual([c('SQLite').leasehold, c('SQLite').verdict], ['4', 'not met']);
    assert.deepEqual([c('Kubernetes').leasehold, c('Kubernetes').verdict, c('Kubernetes').clientGo], ['3', 'met', '1']);
    const k2 = row(rows, 'crash failover after the expiry, 2 candidates', 'Kubernetes');
    assert.deepEqual([k2.leasehold, k2.verdict], ['50 ms; 56 ms', 'met']);
    assert.equal(row(rows, 'crash failover after the expiry, 2 candidates', 'PostgreSQL').verdict, 'met');
    assert.equal(row(rows, 'crash failover after the expiry, 100 standbys', 'Kubernetes').clientGo, '331 ms');
    assert.equal(row(rows, 'graceful handoff p95, 100 standbys against 2 candidates', 'SQLite').leasehold, '70 vs 50 ms');
  });

  it('says "not measured in this run" and judges nothing where a part did not run', () => {
    const rows = handoffGoalRows(inputs({ scale: null, postgres: null }));
    for (const r of rows.filter((x) => x.store === 'PostgreSQL' || /standbys/.test(x.goal))) {
      assert.deepEqual([r.leasehold, r.verdict], ['not measured in this run', ''], `${r.goal} on ${r.store}`);
    }
    assert.equal(row(rows, 'graceful handoff (SIGTERM), 2 candidates', 'SQLite').verdict, 'met');
  });

  it('gives the note, without figures, only while a graceful handoff misses the goal', () => {
    assert.ok(handoffGoalsMarkdown(inputs()).includes(HANDOFF_GOAL_NOTE));
    for (const figure of ['110', '120', '150', '51']) assert.ok(!HANDOFF_GOAL_NOTE.includes(figure));
    const fast = inputs();
    fast.sqlite = store(20, 20, 30);
    fast.kube!.latency = { 'leasehold SIGTERM': f(30), 'leasehold SIGTERM, 3 candidates': f(30), 'client-go to leasehold SIGTERM': f(40) };
    assert.ok(!handoffGoalsMarkdown(fast).includes(HANDOFF_GOAL_NOTE));
  });
});
