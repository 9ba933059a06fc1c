/**
 * The operator's replicas as the cluster tier reads them from the host (the pod network is on a
 * bridge of this machine): each one's pod IP, the certificate its webhook port serves, and a
 * gauge of its /metrics. The port's certificate is what a check compares, not trusted: it is
 * read without verification.
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

/** The SHA-256 fingerprint of the certificate a replica serves now (a new connection each time). */
export function servedFingerprint(ip: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: ip, port: WEBHOOK_PORT, rejectUnauthorized: false, timeout: 5_000 }, () => {
      resolve(s.getPeerX509Certificate()!.fingerprint256);
      s.end();
    });
    s.on('timeout', () => s.destroy(new Error(`no TLS answer from ${ip}:${WEBHOOK_PORT}`)));
    s.on('error', reject);
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
