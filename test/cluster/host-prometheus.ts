/**
 * A real Prometheus on the cluster tier's host (built by test/support/build-prometheus.sh): it finds
 * the release's pods through the API server (kubernetes_sd_configs, with the session's
 * kubeconfig), scrapes their sidecars by pod IP (reachable from the host) with the labels a
 * ServiceMonitor gives them (job, namespace, pod), and evaluates the rule groups it is given.
 * Everything lives in one temp folder, removed by stop().
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { start, waitFor, type Proc } from '../support/cli.js';
import { buildTool } from '../support/build-tool.js';
import { freePort } from '../support/control-plane.js';

export interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

export class HostPrometheus {
  private proc: Proc | null = null;
  private port = 0;
  private readonly dir = mkdtempSync('/tmp/leasehold-prometheus-');

  async start(o: { kubeconfig: string; namespace: string; release: string; job: string; scrapeSeconds: number; groups: unknown }): Promise<void> {
    const bin = buildTool('build-prometheus.sh');
    writeFileSync(join(this.dir, 'rules.yaml'), dump({ groups: o.groups }));
    writeFileSync(
      join(this.dir, 'prometheus.yml'),
      dump({
        global: { scrape_interval: `${o.scrapeSeconds}s`, evaluation_interval: '1s', scrape_timeout: '1s' },
        rule_files: ['rules.yaml'],
        scrape_configs: [
          {
            job_name: o.job,
            kubernetes_sd_configs: [
              {
                role: 'pod',
                kubeconfig_file: o.kubeconfig,
                namespaces: { names: [o.namespace] },
                selectors: [{ role: 'pod', label: `app.kubernetes.io/instance=${o.release}` }],
              },
            ],
            relabel_configs: [
              { source_labels: ['__meta_kubernetes_pod_container_port_name'], regex: 'leasehold', action: 'keep' },
              { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
              { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
            ],
          },
        ],
      }),
    );
    this.port = await freePort();
    this.proc = start(join(bin, 'prometheus'), [
      `--config.file=${join(this.dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(this.dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${this.port}`,
      '--log.level=warn',
    ]);
    await waitFor('Prometheus ready', async () => (await fetch(`http://127.0.0.1:${this.port}/-/ready`).catch(() => null))?.status === 200, 60_000, 200);
  }

  async api<T>(path: string): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.port}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${path}: ${body.error}`);
    return body.data;
  }

  query(q: string): Promise<{ result: { metric: Record<string, string>; value: [number, string] }[] }> {
    return this.api(`/api/v1/query?query=${encodeURIComponent(q)}`);
  }

  async alerts(): Promise<Alert[]> {
    return (await this.api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts;
  }

  async firing(name: string): Promise<Alert[]> {
    return (await this.alerts()).filter((a) => a.state === 'firing' && a.labels.alertname === name);
  }

  /** True once every rule group has been evaluated after `t` (Unix seconds). */
  async evaluatedAfter(t: number): Promise<boolean> {
    const rules = await this.api<{ groups: { lastEvaluation: string }[] }>('/api/v1/rules');
    return rules.groups.length > 0 && rules.groups.every((g) => Date.parse(g.lastEvaluation) / 1000 > t);
  }

  async stop(): Promise<void> {
    if (this.proc) {
      const proc = this.proc;
      proc.kill('SIGTERM');
      const stuck = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await proc.exited;
      clearTimeout(stuck);
      this.proc = null;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
