import type { LeaseStore } from '../src/backends/lease-store.js';
import { openStore, type StoreSettings } from '../src/backends/open-store.js';
import { describeError, isLeaseholdError } from '../src/errors.js';
import { formatDuration } from '../src/config/duration.js';
import { STORE_OPTIONS, resolveStore } from './election-flags.js';
import type { ArgsOf, CommandSpec, FlagTable, FlagValues } from './flag-table.js';
import type { CliIo, CommandContext } from './cli-io.js';
import { SHUTDOWN_SIGNALS } from './signals.js';
import { escapeForTerminal, jsonForTerminal } from '../src/util/escape-control.js';
import { watchLease } from './status-watch.js';
import { formatCandidate } from './status-candidate.js';
import { readReport, type LeaseReport } from './lease-report.js';
import { readGroupReport } from './group-report.js';
import { formatGroupReport, readShardsCandidate } from './group-format.js';
import { InvalidConfigError } from '../src/errors.js';

export const STATUS_OPTIONS = {
  ...STORE_OPTIONS,
  json: { type: 'boolean', default: false, describe: 'Print one JSON object (for scripts)' },
  watch: {
    type: 'boolean',
    default: false,
    describe: 'Print one line per change of holder, token or state until interrupted (JSON lines with --json)',
  },
  'status-dir': {
    type: 'string',
    describe: "Also show the candidate whose sidecar writes this status directory: leader, campaigning, or standing aside (its app's health) and why",
  },
} as const satisfies FlagTable;

export type StatusArgs = ArgsOf<typeof STATUS_OPTIONS>;

export const STATUS_COMMAND = {
  name: 'status',
  description: "Show who holds a lease, its fencing token and when it expires; for a shard group, each shard's owner and token",
  flags: STATUS_OPTIONS,
} as const satisfies CommandSpec;

/** The exit status when the store did not answer within its bound (an unreachable server, a locked table). */
export const EXIT_STORE_UNAVAILABLE = 3;

/**
 * Reads the lease once, writing nothing. Exit 0 when found, 1 when there is no such lease, 3
 * (with one line on stderr) when the store does not answer in time: every request is bounded,
 * so a locked table or a hung server never makes it hang.
 */
export async function runStatus(f: FlagValues<StatusArgs>, { io }: CommandContext): Promise<number> {
  const { store: settings, lease } = resolveStore(f);
  try {
    return await readAndPrint(f.values, settings, lease, io);
  } catch (err) {
    if (!isLeaseholdError(err, 'LEASEHOLD_ERR_BACKEND_UNAVAILABLE')) throw printable(err);
    io.stderr(`leasehold: ${escapeForTerminal(describeError(err).replace(/\s*\n\s*/g, ' '))}\n`);
    return EXIT_STORE_UNAVAILABLE;
  }
}

/**
 * The error with its message (and its cause's) escaped for a terminal, class and code kept: a
 * message may quote a value read from the store (an invalid token), which any peer can write.
 */
function printable(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  err.message = escapeForTerminal(err.message);
  if (err.cause instanceof Error) err.cause.message = escapeForTerminal(err.cause.message);
  return err;
}

async function readAndPrint(a: StatusArgs, settings: StoreSettings, lease: string, io: CliIo): Promise<number> {
  // A watch follows a replaced SQLite file: say so on stderr, as its other notices.
  const notice = (message: string) => io.stderr(`leasehold: ${escapeForTerminal(message)}\n`);
  const log = { debug() {}, info() {}, warn: notice, error: notice };
  const store = await openStore({ ...settings, readonly: true, log });
  try {
    // On SQLite and PostgreSQL a lease and a shard group are kept apart, so one name can be both;
    // on Kubernetes the group's header is a Lease of that name, which is the group.
    const bothKinds = store.backend !== 'kubernetes';
    if (a.watch) {
      // A group is not watched (yet): said before anything is printed. A lease of the same name is.
      if (await readGroupReport(store, lease, new Date())) {
        const leaseToo = bothKinds && (await readReport(store, lease, new Date())).found;
        if (!leaseToo) throw new InvalidConfigError(WATCH_GROUP_RULE(lease));
        io.stderr(`leasehold: ${escapeForTerminal(WATCH_BOTH_NOTICE(lease))}\n`);
      }
      return await watchUntilSignal(store, lease, a.json, a['status-dir'], io);
    }
    const report = await readReport(store, lease, new Date(), a['status-dir']);
    const now = new Date();
    const group = await readGroupReport(store, lease, now);
    if (group) {
      const statusDir = a['status-dir'];
      const candidate = statusDir === undefined ? undefined : readShardsCandidate(statusDir);
      const groupJson = { ...group, ...(candidate ? { candidate } : {}) };
      // Both: the lease first, then the group; in JSON the lease's report with the group in it.
      if (report.found && bothKinds) {
        io.stdout(
          a.json ? jsonForTerminal({ ...report, shardGroup: groupJson }) + '\n' : `${formatReport(report, now)}\n${formatGroupReport(group, now, candidate)}`,
        );
      } else {
        io.stdout(a.json ? jsonForTerminal(groupJson) + '\n' : formatGroupReport(group, now, candidate));
      }
      return 0;
    }
    io.stdout(a.json ? jsonForTerminal(report) + '\n' : formatReport(report, new Date()));
    return report.found ? 0 : 1;
  } finally {
    await store.close();
  }
}

const WATCH_BOTH_NOTICE = (name: string) =>
  `${name} is both a lease and a shard group: --watch follows the lease; run leasehold status --lease ${name} without --watch to see the group's shards too`;

const WATCH_GROUP_RULE = (group: string) =>
  `--watch follows one lease, and ${group} is a shard group: run leasehold status --lease ${group} without --watch to see its shards, or follow a member's GET /shards?watch=1`;

/** `--watch`: until SIGINT, SIGTERM or SIGHUP, then exit 0. */
async function watchUntilSignal(store: LeaseStore, lease: string, json: boolean, statusDir: string | undefined, io: CliIo): Promise<number> {
  const stop = new AbortController();
  // Each listener once: the same signal again while the watch closes has its default effect.
  const listeners = SHUTDOWN_SIGNALS.map((signal) => {
    const listener = () => {
      io.signals.off(signal, listener);
      stop.abort();
    };
    io.signals.on(signal, listener);
    return [signal, listener] as const;
  });
  try {
    await watchLease(store, lease, { json, write: io.stdout, notice: io.stderr, signal: stop.signal, statusDir });
  } finally {
    for (const [signal, listener] of listeners) io.signals.off(signal, listener);
  }
  return 0;
}

export function formatReport(r: LeaseReport, now: Date): string {
  if (!r.found) {
    const candidate = r.candidate ? `sidecar  ${formatCandidate(r.candidate)}\n` : '';
    return `lease ${r.lease} not found in ${r.backend} store ${r.location}\n${candidate}`;
  }
  const rel = (iso: string | null | undefined) => {
    if (!iso) return '-';
    const d = new Date(iso).getTime() - now.getTime();
    const amount = formatDuration(Math.round(Math.abs(d) / 100) * 100);
    return `${iso} (${d >= 0 ? `in ${amount}` : `${amount} ago`})`;
  };
  const rows: [string, string][] = [
    ['lease', `${r.lease} (${r.backend}: ${r.location})`],
    ['state', r.state ?? '-'],
    // The holder comes from the store, written by any peer: escaped, it cannot move the cursor, forge a line or reorder the screen.
    ['holder', r.holder === '' ? '(none: released)' : r.holder === undefined ? '-' : escapeForTerminal(r.holder)],
    ['token', String(r.fencingToken)],
    ['acquired', rel(r.acquiredAt)],
    ['renewed', rel(r.renewedAt)],
    ['expires', r.state === 'released' || !r.expiresAt ? '-' : `${rel(r.expiresAt)}, by this machine's clock`],
    ...(r.candidate ? [['sidecar', formatCandidate(r.candidate)] as [string, string]] : []),
  ];
  return rows.map(([k, v]) => `${k.padEnd(9)}${v}`).join('\n') + '\n';
}
