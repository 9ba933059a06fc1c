import { spawn } from 'node:child_process';
import { escapeControl } from '../util/escape-control.js';
import { PROBE_MARKER_VARIABLE, probeMarker, reapProbe } from './probe-reaper.js';
import { classifyError, healthy, notSent, unhealthy, type Probe, type ProbeResult } from './probe-result.js';

/** How much of the command's output its failure reason quotes; the rest is read and dropped. */
const REASON_OUTPUT_CHARS = 200;

/**
 * The kubelet's exec probe: runs `command` (an argv, no shell unless it names one) with
 * `environment` (default: this process's) and is healthy on exit 0. Its output is drained (so a chatty command never blocks on a full pipe)
 * and dropped, but for the start of it, quoted in a failure's reason. It runs in a session and
 * process group of its own, with this probe's marker in its environment: when the probe is
 * aborted (its timeout) while the command still runs, the group is killed by its PID with
 * SIGKILL, and then whatever else the command started, found by its marker, session or parent
 * (probe-reaper.ts: also what left the group with `setsid`), so neither the command nor what it
 * started outlives the timeout; when the command exits, what it left running is killed the same
 * way, or a check that starts a background job would leave one more process every period, until
 * the host runs out of process slots. A command that cannot be started for want of memory, process slots or file
 * descriptors (EAGAIN, ENOMEM, EMFILE, ENFILE) is notSent; a missing or non-executable one
 * (ENOENT, EACCES) is unhealthy, since it will never pass.
 */
export function execProbe(command: readonly string[], environment: Readonly<Record<string, string | undefined>> = process.env): Probe {
  const [file, ...args] = command;
  const what = `exec ${command.join(' ')}`;
  // One marker for every run of this probe: a run's search also finds what an earlier run's
  // missed (a process forked between that search and its kill).
  const marker = probeMarker();
  const env = { ...environment, [PROBE_MARKER_VARIABLE]: marker };
  return {
    description: what,
    run: (signal) =>
      new Promise<ProbeResult>((resolve) => {
        if (!file) return resolve(notSent('no command to run'));
        let child;
        try {
          child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
        } catch (err) {
          return resolve(classifyError(err, what));
        }
        let exited = false;
        let output = '';
        const keep = (chunk: Buffer) => {
          if (output.length < REASON_OUTPUT_CHARS) output += chunk.toString('utf8', 0, Math.min(chunk.length, REASON_OUTPUT_CHARS));
        };
        child.stdout.on('data', keep);
        child.stderr.on('data', keep);
        const killGroup = () => {
          if (child.pid === undefined) return;
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // The group is empty (nothing left behind), or was never made.
          }
          // What left the group (setsid, a double fork) carries the marker, or is in the
          // command's session (it leads one: detached), or descends from one that is.
          reapProbe(marker, child.pid);
        };
        const onAbort = () => {
          if (exited || child.pid === undefined) return;
          killGroup();
          child.kill('SIGKILL');
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const done = (r: ProbeResult) => {
          exited = true;
          signal.removeEventListener('abort', onAbort);
          // Whatever the command left running with our pipes open no longer holds this process.
          child.stdout.destroy();
          child.stderr.destroy();
          resolve(r);
        };
        child.once('error', (err) => done(classifyError(err, what)));
        child.once('exit', (code, sig) => {
          // What the command started and left behind (a `&` job, a daemon) goes with it.
          killGroup();
          if (code === 0) return done(healthy());
          const said = escapeControl(output.slice(0, REASON_OUTPUT_CHARS).replace(/\s+/g, ' ')).trim();
          done(unhealthy(`${what}: ${code === null ? `killed by ${sig}` : `exit code ${code}`}${said ? `: ${said}` : ''}`));
        });
      }),
  };
}
