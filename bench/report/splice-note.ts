import type { PhaseContext } from '../phase.js';

/** The note a spliced cluster section carries: the command that re-measured it (as root), and when. */
export const clusterSpliceNote = (ctx: PhaseContext, what: string): string =>
  `_This section was re-measured by \`flock /tmp/cluster.lock npm run bench -- --cluster-trials ${ctx.opts.clusterTrials} --only ${ctx.only} --splice\` (as root) on ${ctx.today}${what}._\n\n`;
