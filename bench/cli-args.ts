/**
 * `--name value` options for the bench and chaos scripts, parsed by the CLI's own parser
 * (cmd/cli-parser.ts) from one table: a mistyped flag, or a number that is none, is refused
 * with one line and exit 2 rather than silently taking its default.
 */
import { parseFlags } from '../cmd/cli-parser.js';
import type { FlagTable } from '../cmd/flag-table.js';
import { cliMessage, EXIT_USAGE } from '../cmd/cli-errors.js';

/** Every flag of `npm run bench` (bench/run.ts) and `npm run chaos` (test/chaos/cli.ts); defaults are the scripts'. */
export const BENCH_FLAGS = {
  only: { type: 'string', describe: 'bench: the phases to run, comma-separated (--list shows them)' },
  list: { type: 'boolean', describe: 'bench: print the registry of phases (name, root, estimate) and exit' },
  splice: { type: 'boolean', describe: 'bench: with --only, replace that part of docs/benchmarks.md' },
  write: { type: 'boolean', default: true, describe: 'bench: write docs/benchmarks.md (--no-write: print only)' },
  trials: { type: 'string', describe: 'bench: failovers per row' },
  seconds: { type: 'string', describe: 'bench: seconds per throughput window; chaos: seconds per backend' },
  'idle-seconds': { type: 'string', describe: 'bench: the idle window' },
  standbys: { type: 'string', describe: 'bench: standbys of the scale part' },
  'scale-trials': { type: 'string', describe: 'bench: trials of the scale part' },
  'scale-setups': { type: 'string', describe: 'bench: the setups of the scale part, comma-separated' },
  streams: { type: 'string', describe: 'bench: streams of the streams part' },
  'cluster-trials': { type: 'string', describe: 'bench: trials of the cluster part' },
  'operator-pods': { type: 'string', describe: 'bench: pods per arm of the operator part' },
  'shard-idle-seconds': { type: 'string', describe: 'bench: the idle window of each case of the shards part' },
  'shard-sizes': { type: 'string', describe: 'bench: the shard counts N of the shards part, comma-separated' },
  'shard-members': { type: 'string', describe: 'bench: the member counts M of the shards part, comma-separated, ascending' },
  'shard-stores': { type: 'string', describe: 'bench: the stores of the shards part: sqlite, postgres, kubernetes, comma-separated' },
  'shard-kube-cases': { type: 'string', describe: 'bench: the Kubernetes cases of the shards part, NxM (N shards, M members), comma-separated' },
  backend: {
    type: 'string',
    describe:
      'chaos: sqlite, kubernetes, postgres, both, all, elector, workloads, shard-history, or shards-sqlite, shards-postgres, shards (fenced shard writes), or shard-pause[-sqlite|-postgres|-kubernetes]',
  },
  seed: { type: 'string', describe: 'chaos: the seed (elector: the first seed)' },
  seeds: { type: 'string', describe: 'chaos --backend elector: how many seeds' },
  versions: { type: 'string', describe: 'chaos --backend elector: unique, restart or both' },
  history: { type: 'boolean', describe: 'chaos: record store calls and fenced writes, and check them with Porcupine (docs/testing.md)' },
} as const satisfies FlagTable;

const LISTED = `the flags are ${Object.keys(BENCH_FLAGS)
  .map((f) => `--${f}`)
  .join(', ')}`;

const parsed = new Map<readonly string[], Record<string, unknown>>();

/** The flags in `args`, parsed once; bad input ends the process with one line and exit 2. */
function flags(args: readonly string[]): Record<string, unknown> {
  let got = parsed.get(args);
  if (got) return got;
  try {
    // No LEASEHOLD_<FLAG> variables here: LEASEHOLD_BACKEND is the CLI's, not the chaos script's.
    got = parseFlags(BENCH_FLAGS, args, {}, { command: 'bench', listed: LISTED }).values;
  } catch (err) {
    process.stderr.write(`bench: ${cliMessage(err)}\n`);
    process.exit(EXIT_USAGE);
  }
  parsed.set(args, got);
  return got;
}

const ARGV = process.argv.slice(2);

export function option(name: keyof typeof BENCH_FLAGS, dflt: string, args: readonly string[] = ARGV): string {
  const value = flags(args)[name];
  return typeof value === 'string' ? value : dflt;
}

/**
 * A comma-separated list of whole numbers from `min` to `max`, ascending and without repeats (the
 * shards part grows one group through its member counts in order); else one line and exit 2.
 */
export function countsOption(name: keyof typeof BENCH_FLAGS, dflt: readonly number[], min: number, max: number, args: readonly string[] = ARGV): number[] {
  const text = option(name, dflt.join(','), args);
  const counts = text.split(',').map((c) => (/^\d+$/.test(c) ? Number(c) : NaN));
  if (!counts.every((c, i) => Number.isInteger(c) && c >= min && c <= max && (i === 0 || c > counts[i - 1]!))) {
    process.stderr.write(
      `bench: invalid --${name} ${JSON.stringify(text)}: must be whole numbers from ${min} to ${max}, ascending, comma-separated, such as ${dflt.join(',')}\n`,
    );
    process.exit(EXIT_USAGE);
  }
  return counts;
}

/** A comma-separated subset of `known`, in any order; else one line and exit 2. */
export function choicesOption(name: keyof typeof BENCH_FLAGS, known: readonly string[], args: readonly string[] = ARGV): string[] {
  const text = option(name, known.join(','), args);
  const chosen = text.split(',');
  const wrong = chosen.find((c) => !known.includes(c));
  if (wrong !== undefined || new Set(chosen).size !== chosen.length) {
    process.stderr.write(`bench: invalid --${name} ${JSON.stringify(text)}: must name each of ${known.join(', ')} at most once, comma-separated\n`);
    process.exit(EXIT_USAGE);
  }
  return known.filter((k) => chosen.includes(k));
}

export const numberOption = (name: keyof typeof BENCH_FLAGS, dflt: number, args: readonly string[] = ARGV): number => {
  const text = option(name, String(dflt), args);
  if (!/^\d+(\.\d+)?$/.test(text)) {
    process.stderr.write(`bench: invalid --${name} ${JSON.stringify(text)}: must be a number such as ${dflt}\n`);
    process.exit(EXIT_USAGE);
  }
  // Every count and window is a sample to take: none of zero measures anything, and a phase
  // given one fails after the build with a stack trace instead of this line.
  if (Number(text) === 0) {
    process.stderr.write(`bench: invalid --${name} ${JSON.stringify(text)}: must be above 0\n`);
    process.exit(EXIT_USAGE);
  }
  return Number(text);
};
