/**
 * What one probe of the app says, in the kubelet's terms plus one: healthy, unhealthy (the app
 * failed the check), or notSent (the sidecar could not even send it, by its own fault: no file
 * descriptor, no memory, no process slot). A notSent result says nothing about the app, so it
 * counts neither way (health-counter.ts; docs/health.md).
 */
export type ProbeResult = { outcome: 'healthy' } | { outcome: 'unhealthy'; reason: string } | { outcome: 'notSent'; reason: string };

/** One check of the app. `run` stops what it started (socket, request, child) when `signal` aborts. */
export interface Probe {
  /** What it checks, for logs: `http GET http://127.0.0.1:8080/healthz`, `tcp 127.0.0.1:5432`, `exec check.sh`. */
  readonly description: string;
  run(signal: AbortSignal): Promise<ProbeResult>;
}

export const healthy = (): ProbeResult => ({ outcome: 'healthy' });
export const unhealthy = (reason: string): ProbeResult => ({ outcome: 'unhealthy', reason });
export const notSent = (reason: string): ProbeResult => ({ outcome: 'notSent', reason });

/**
 * Errors that are this process's own shortage, not the app's answer: out of file descriptors
 * (EMFILE, ENFILE), of memory or process slots (ENOMEM, EAGAIN), of socket buffers (ENOBUFS),
 * or of local ports (EADDRNOTAVAIL).
 */
const OWN_FAULT = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'ENOBUFS', 'EADDRNOTAVAIL']);

/** An error met while sending a probe: notSent when the shortage is ours, unhealthy otherwise. */
export function classifyError(err: unknown, what: string): ProbeResult {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string' && OWN_FAULT.has(code)) return notSent(`${what} could not be sent: ${message}`);
  if (code === 'ECONNREFUSED') return unhealthy(`${what}: connection refused`);
  return unhealthy(`${what}: ${message}`);
}
