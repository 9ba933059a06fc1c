import type { Clock } from '../clock.js';
import { describeError } from '../errors.js';
import { notSent, unhealthy, type Probe, type ProbeResult } from './probe-result.js';

/**
 * Runs one probe bounded by `timeoutMs` on `clock`: past it the result is unhealthy (the app did
 * not answer in time, the kubelet's rule) and the probe's signal aborts, so it closes its
 * socket or kills its child. Aborting `signal` (the monitor stopping) cancels it the same way;
 * the result is then notSent. A probe that throws is the sidecar's own fault: notSent.
 */
export async function runProbe(probe: Probe, opts: { timeoutMs: number; clock: Clock; signal?: AbortSignal }): Promise<ProbeResult> {
  const outer = opts.signal;
  if (outer?.aborted) return notSent('cancelled');
  const cancel = new AbortController();
  let timer: { cancel(): void } | undefined;
  let onOuter: (() => void) | undefined;
  // Settled before the probe's signal aborts, so this answer wins over whatever the aborted
  // probe resolves with in the same turn.
  const bounded = new Promise<ProbeResult>((resolve) => {
    timer = opts.clock.setTimer(() => {
      resolve(unhealthy(`no answer within ${opts.timeoutMs} ms`));
      cancel.abort(new Error('probe timed out'));
    }, opts.timeoutMs);
    onOuter = () => {
      resolve(notSent('cancelled'));
      cancel.abort(new Error('probe cancelled'));
    };
    outer?.addEventListener('abort', onOuter, { once: true });
  });
  const sent = (async () => {
    try {
      return await probe.run(cancel.signal);
    } catch (err) {
      return notSent(`internal error in the probe: ${describeError(err)}`);
    }
  })();
  try {
    return await Promise.race([bounded, sent]);
  } finally {
    timer?.cancel();
    if (onOuter) outer?.removeEventListener('abort', onOuter);
    // Whatever the probe still holds (a body being drained, a child) is let go now.
    if (!cancel.signal.aborted) cancel.abort(new Error('probe finished'));
  }
}
