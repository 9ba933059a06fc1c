import { realClock, type Clock, type Timer } from '../clock.js';
import { CountedHealth } from './counted-health.js';
import { HealthCounter } from './health-counter.js';
import { resolveProbeOptions, type ProbeOptions, type ResolvedProbeOptions } from './health-settings.js';
import { execProbe } from './exec-probe.js';
import { httpProbe } from './http-probe.js';
import { runProbe } from './probe-timeout.js';
import { tcpProbe } from './tcp-probe.js';
import type { Probe, ProbeResult } from './probe-result.js';

export interface AppHealthOptions {
  /** Default: the real clock. */
  clock?: Clock;
  /** A probe to run instead of the one `probe` names (tests). */
  probeOverride?: Probe;
  /** Hears every result, for logs and metrics. */
  onResult?: (result: ProbeResult) => void;
}

/** The probe an option names. */
export function probeFor(target: ResolvedProbeOptions['probe']): Probe {
  if ('http' in target) return httpProbe(target.http);
  if ('tcp' in target) return tcpProbe(target.tcp.host ?? '127.0.0.1', target.tcp.port);
  return execProbe(target.exec, target.env);
}

/**
 * The app's health from a probe, as the kubelet runs a readiness probe: first after
 * initialDelayMs, then every periodMs from the start of the last (one at a time: the timeout is
 * at most the period), each bounded by timeoutMs; the results counted by a HealthCounter
 * (thresholds, notSent, hold-down). Nothing runs before start() or after stop().
 */
export class AppHealth extends CountedHealth {
  readonly settings: ResolvedProbeOptions;
  private readonly clock: Clock;
  private readonly probe: Probe;
  private readonly onResult: ((r: ProbeResult) => void) | undefined;
  private timer: Timer | null = null;
  private running: AbortController | null = null;

  /** Validates the options (InvalidConfigError naming the rule); starts nothing. */
  constructor(options: ProbeOptions, internal: AppHealthOptions = {}) {
    const settings = resolveProbeOptions(options);
    const clock = internal.clock ?? realClock;
    super(new HealthCounter(settings, clock));
    this.settings = settings;
    this.clock = clock;
    this.probe = internal.probeOverride ?? probeFor(this.settings.probe);
    this.onResult = internal.onResult;
  }

  get description(): string {
    return this.probe.description;
  }

  start(): void {
    if (this.running) return;
    this.running = new AbortController();
    this.schedule(this.settings.initialDelayMs, this.running.signal);
  }

  /** Stops probing: the probe in flight is cancelled, its result dropped; no timer is left. */
  stop(): void {
    this.running?.abort();
    this.running = null;
    this.timer?.cancel();
    this.timer = null;
    this.counter.cancelTimers();
  }

  private schedule(ms: number, signal: AbortSignal): void {
    this.timer = this.clock.setTimer(() => void this.probeOnce(signal), ms);
  }

  private async probeOnce(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const startMono = this.clock.monotonic();
    const result = await runProbe(this.probe, { timeoutMs: this.settings.timeoutMs, clock: this.clock, signal });
    if (signal.aborted) return;
    try {
      this.onResult?.(result);
    } catch {
      // A reporter's failure must not stop the probing.
    }
    this.counter.record(result);
    this.schedule(Math.max(0, startMono + this.settings.periodMs - this.clock.monotonic()), signal);
  }
}
