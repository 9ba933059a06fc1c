/**
 * `--only failover`: every handoff and failover row of SQLite, PostgreSQL and Kubernetes (2 and 3
 * candidates, client-go to leasehold), with no throughput, idle windows or disk, printed below
 * the goals table (bench/report/handoff-goals.ts); the 100-standby rows are not measured.
 */
import type { Phase, PhaseResult } from '../phase.js';
import { handoffGoalsMarkdown } from '../report/handoff-goals.js';
import { LATENCY_ROWS } from '../lib/latency-rows.js';
import { benchKubernetes } from './kubernetes.js';
import { benchSqlite } from './sqlite.js';
import { benchPostgres } from './postgres.js';

export const failoverPhase: Phase<PhaseResult> = {
  name: 'failover',
  what: () => 'the handoff and failover rows of Kubernetes, SQLite and PostgreSQL, and the goals table',
  needsRoot: false,
  inFullRun: false,
  // Kubernetes: each latency trial about 7 s, the hand-back of the client-go row about 4 s more; SQLite and PostgreSQL: 3 rows of about 3 s a trial.
  estimateS: (o) => 60 + LATENCY_ROWS.length * o.trials * 7 + o.trials * 4 + (5 + 3 * o.trials * 3) + (10 + 3 * o.trials * 3),
  async run(ctx) {
    const { trials, idleSeconds, standbys } = ctx.opts;
    const rows = { trials, log: ctx.log, latencyOnly: true };
    const kube = await benchKubernetes({ ...rows, idleSeconds });
    const sqlite = await benchSqlite({ ...rows, seconds: ctx.opts.seconds ?? 3 });
    const postgres = await benchPostgres({ ...rows, seconds: ctx.opts.seconds ?? 3 });
    const goals = handoffGoalsMarkdown({ sqlite, postgres, kube, scale: null, standbys });
    return { markdown: [`${goals}\n`, kube.markdown, sqlite.markdown, postgres.markdown].join('\n') };
  },
};
