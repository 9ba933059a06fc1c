/**
 * The operator's replicas as the cluster tier reads them from the host (the pod network is on a
 * bridge of this machine): each one's pod IP, the certificate its webhook port serves (verified
 * as the API server verifies it), and a gauge of its /metrics (read without verification: only
 * its value matters there).
 */
import { get } from 'node:https';
import { connect } from 'node:tls';
import type { Kubectl } from '../support/cluster-views.js';

export const WEBHOOK_PORT = 8443;

export interface Replica {
  name: string;
  ip: string;
}

/** The Ready replicas not being deleted, by the chart's selector labels. */
export function readyReplicas(kubectl: Kubectl, ns: string, release: string): Replica[] {
  const list = JSON.parse(
    kubectl('-n', ns, 'get', 'pods', '-l', `app.kubernetes.io/name=leasehold-operator,app.kubernetes.io/instance=${release}`, '-o', 'json'),
  ) as {
    items: { metadata: { name: string; deletionTimestamp?: string }; status: { podIP?: string; conditions?: { type: string; status: string }[] } }[];
  };
  return list.items
    .filter((p) => !p.metadata.deletionTimestamp && p.status.podIP && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
    .map((p) => ({ name: p.metadata.name, ip: p.status.podIP! }));
}

/**
 * The SHA-256 fingerprint of the certificate a replica serves now, on a new connection verified
 * as the API server verifies one to the webhook: against `ca` (the caBundle, PEM) for the
 * Service's name `servername`. Rejects when that handshake fails.
 */
export function servedFingerprint(ip: string, ca: string, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: ip, port: WEBHOOK_PORT, ca, servername, timeout: 5_000 }, () => {
      resolve(s.getPeerX509Certificate()!.fingerprint256);
      s.end();
    });
    s.on('timeout', () => s.destroy(new Error(`no TLS answer from ${ip}:${WEBHOOK_PORT}`)));
    s.on('error', (err: Error) => reject(new Error(`TLS to ${ip}:${WEBHOOK_PORT} as ${servername}: ${err.message}`, { cause: err })));
  });
}

/** One unlabelled gauge or counter of a replica's /metrics, or undefined when absent. */
export function metricValue(ip: string, name: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = get({ host: ip, port: WEBHOOK_PORT, path: '/metrics', rejectUnauthorized: false, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        const line = body.split('\n').find((l) => l.startsWith(`${name} `));
        resolve(line === undefined ? undefined : Number(line.slice(name.length + 1)));
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no /metrics answer from ${ip}:${WEBHOOK_PORT}`)));
    req.on('error', reject);
  });
}
