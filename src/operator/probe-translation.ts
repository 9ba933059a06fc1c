/**
 * The operator's probe translation: the app container's readiness or liveness probe, read from
 * the pod, turned into the sidecar's --health-* flags (docs/health.md). "Health" here is the app's
 * health, as everywhere; this file only translates the kubelet's vocabulary into the sidecar's.
 */
import { InvalidConfigError } from '../errors.js';
import { ANNOTATION, SIDECAR_NAME } from './annotations.js';
import type { Container, Pod } from './pod-types.js';

/** The parts of a core/v1 Probe the injector reads. */
export interface Probe {
  httpGet?: { path?: string; port?: number | string; host?: string; scheme?: string; httpHeaders?: unknown[] };
  tcpSocket?: { port?: number | string; host?: string };
  exec?: unknown;
  grpc?: unknown;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
  initialDelaySeconds?: number;
}

/** The kubelet's defaults for a probe's unset timings: the sidecar then probes at the kubelet's pace. */
export const KUBELET_PROBE_DEFAULTS = { periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3, successThreshold: 1, initialDelaySeconds: 0 } as const;

/** What the injector passes the sidecar about the app's health, and why it passes nothing when a probe was there but not usable. */
export interface HealthFlags {
  /** The sidecar's --health-* arguments; none keeps the election as it was without health. */
  args: string[];
  /** Set when the app has a probe the injector could not use: said back to whoever created the pod, and logged. */
  warning?: string;
}

const LOOPBACK = ['127.0.0.1', 'localhost'];
const RULE = 'must be auto, off, http://127.0.0.1:<port><path> (or localhost), or tcp:<port>';

function bad(annotation: string, value: string, rule: string): InvalidConfigError {
  return new InvalidConfigError(`annotation ${annotation} ${JSON.stringify(value)} is invalid: ${rule}`);
}

/**
 * The sidecar's own port is not the app: a probe there asks leasehold itself (its /readyz follows
 * leadership with --ready-when=leader), so a leader that stood aside would find its "app" unhealthy
 * because it stood aside, and never come back.
 */
function circle(port: number, sidecarPort: number): boolean {
  return port === sidecarPort;
}

function circleRule(port: number): string {
  return `port ${port} is the leasehold sidecar's own port: the app's health must not depend on leadership`;
}

/**
 * The app's health source for the sidecar, from the pod's annotations leasehold.io/health and
 * leasehold.io/health-container and the app container's probes (docs/operator.md, "The app's
 * health"). Throws one InvalidConfigError naming the annotation and the rule on a bad value.
 */
export function healthFlagsFromProbes(pod: Pod, sidecarPort: number): HealthFlags {
  const a = pod.metadata?.annotations ?? {};
  const containers = (pod.spec?.containers ?? []).filter((c) => c.name !== SIDECAR_NAME);
  const containerText = a[ANNOTATION.healthContainer];
  let container: Container | undefined = containers[0];
  if (containerText !== undefined) {
    container = containers.find((c) => c.name === containerText);
    if (!container) {
      throw bad(
        ANNOTATION.healthContainer,
        containerText,
        `the pod has no app container by that name (it has ${containers.map((c) => JSON.stringify(c.name)).join(', ') || 'none'})`,
      );
    }
  }
  const probe = container ? probeOf(container) : undefined;
  const text = a[ANNOTATION.health] ?? 'auto';
  if (text === 'off') return { args: [] };
  if (text === 'auto') {
    if (!container || !probe) return { args: [] };
    const source = sourceOf(container, probe.probe, sidecarPort);
    if (typeof source !== 'string') {
      return {
        args: [],
        warning: `${ANNOTATION.health}: no app health from container ${JSON.stringify(container.name)}'s ${probe.kind} (${source.why}); set ${ANNOTATION.health} to a URL, tcp:<port> or off`,
      };
    }
    return { args: [source, ...timings(probe.probe)] };
  }
  return { args: [explicitSource(text, sidecarPort), ...timings(probe?.probe)] };
}

/** The container's readinessProbe, else its livenessProbe: what the kubelet decides the app's readiness or life by. */
function probeOf(c: Container): { kind: 'readinessProbe' | 'livenessProbe'; probe: Probe } | undefined {
  if (isObject(c.readinessProbe)) return { kind: 'readinessProbe', probe: c.readinessProbe as Probe };
  if (isObject(c.livenessProbe)) return { kind: 'livenessProbe', probe: c.livenessProbe as Probe };
  return undefined;
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** The --health-http or --health-tcp argument a probe becomes, or why it cannot become one. */
function sourceOf(c: Container, p: Probe, sidecarPort: number): string | { why: string } {
  if (p.httpGet) {
    const g = p.httpGet;
    if (g.scheme !== undefined && g.scheme.toUpperCase() !== 'HTTP') return { why: `its scheme is ${g.scheme}: the sidecar probes plain HTTP only` };
    if (g.host && !LOOPBACK.includes(g.host)) return { why: `it probes host ${g.host}, not the pod` };
    if (g.httpHeaders && g.httpHeaders.length > 0) return { why: 'it sends httpHeaders, which the sidecar does not' };
    const port = portOf(c, g.port);
    if (typeof port !== 'number') return port;
    if (circle(port, sidecarPort)) return { why: circleRule(port) };
    const path = g.path ?? '/';
    return `--health-http=http://127.0.0.1:${port}${path.startsWith('/') ? '' : '/'}${path}`;
  }
  if (p.tcpSocket) {
    if (p.tcpSocket.host && !LOOPBACK.includes(p.tcpSocket.host)) return { why: `it connects to host ${p.tcpSocket.host}, not the pod` };
    const port = portOf(c, p.tcpSocket.port);
    if (typeof port !== 'number') return port;
    if (circle(port, sidecarPort)) return { why: circleRule(port) };
    return `--health-tcp=${port}`;
  }
  if (p.exec) return { why: 'it is an exec probe, which runs in the app container, where the sidecar cannot run it' };
  if (p.grpc) return { why: 'it is a grpc probe, which the sidecar does not send' };
  return { why: 'it has no httpGet or tcpSocket' };
}

/** A probe's port: a number, or the name of one of the container's ports. */
function portOf(c: Container, port: number | string | undefined): number | { why: string } {
  if (typeof port === 'number') return port;
  if (typeof port === 'string' && /^[0-9]+$/.test(port)) return Number(port);
  if (typeof port === 'string') {
    if (port === SIDECAR_NAME)
      return { why: `port ${JSON.stringify(port)} is the leasehold sidecar's own port: the app's health must not depend on leadership` };
    const named = (c.ports ?? []).find((p) => p.name === port);
    if (named?.containerPort !== undefined) return named.containerPort;
    return { why: `the container declares no port named ${JSON.stringify(port)}` };
  }
  return { why: 'it names no port' };
}

/**
 * The probe's timings as the sidecar's flags, the kubelet's default for each unset one. The
 * sidecar refuses a timeout longer than the period (one probe in flight at a time), which the
 * kubelet allows: such a timeout is cut to the period rather than the pod being refused.
 */
function timings(p: Probe | undefined): string[] {
  const d = KUBELET_PROBE_DEFAULTS;
  const whole = (v: unknown, min: number, fallback: number) => (typeof v === 'number' && Number.isInteger(v) && v >= min ? v : fallback);
  const period = whole(p?.periodSeconds, 1, d.periodSeconds);
  const timeout = Math.min(whole(p?.timeoutSeconds, 1, d.timeoutSeconds), period);
  return [
    `--health-period=${period}s`,
    `--health-timeout=${timeout}s`,
    `--health-initial-delay=${whole(p?.initialDelaySeconds, 0, d.initialDelaySeconds)}s`,
    `--health-failure-threshold=${whole(p?.failureThreshold, 1, d.failureThreshold)}`,
    `--health-success-threshold=${whole(p?.successThreshold, 1, d.successThreshold)}`,
  ];
}

/** The source leasehold.io/health names, checked: the app in the pod (loopback), never the sidecar itself. */
function explicitSource(text: string, sidecarPort: number): string {
  const tcp = /^tcp:([0-9]{1,5})$/.exec(text);
  if (tcp) {
    const port = Number(tcp[1]);
    if (port < 1 || port > 65535) throw bad(ANNOTATION.health, text, 'the port must be from 1 to 65535');
    if (circle(port, sidecarPort)) throw bad(ANNOTATION.health, text, circleRule(port));
    return `--health-tcp=${port}`;
  }
  if (!text.startsWith('http://')) throw bad(ANNOTATION.health, text, RULE);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad(ANNOTATION.health, text, RULE);
  }
  if (!LOOPBACK.includes(url.hostname))
    throw bad(ANNOTATION.health, text, `the host must be 127.0.0.1 or localhost: the sidecar probes the app in its own pod`);
  if (url.username || url.password) throw bad(ANNOTATION.health, text, 'a URL with credentials is refused');
  const port = url.port === '' ? 80 : Number(url.port);
  if (circle(port, sidecarPort)) throw bad(ANNOTATION.health, text, circleRule(port));
  return `--health-http=${text}`;
}
