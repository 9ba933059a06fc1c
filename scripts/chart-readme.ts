/**
 * Writes each chart's README.md (deploy/helm/leasehold, deploy/helm/leasehold-operator) from the
 * chart itself: each value documented with a `# --` comment in values.yaml (the helm-docs
 * convention), its type from values.schema.json and its default from values.yaml. `--check`
 * fails when a README is out of date (npm run lint).
 *   node --import tsx scripts/chart-readme.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Each chart, and what its README says before the value table (how to use it). */
export const CHARTS = {
  leasehold: {
    dir: 'deploy/helm/leasehold',
    usage: ['How to install it and what was verified', 'on a real node: the repository README, "Run on Kubernetes".'],
  },
  'leasehold-operator': {
    dir: 'deploy/helm/leasehold-operator',
    usage: [
      'docs/operator.md in the',
      'repository describes every annotation, the RBAC, the certificates and the failure policy.',
      '',
      '```sh',
      'helm install leasehold-operator deploy/helm/leasehold-operator -n leasehold-system --create-namespace \\',
      '  --set image.repository=<your-registry>/leasehold --set image.tag=0.1.0',
      '```',
      '',
      "then label your workload's pod template (not the Deployment itself: the webhook sees pods, and",
      'a pod gets the labels of its template):',
      '',
      '```yaml',
      'spec:',
      '  template:',
      '    metadata:',
      '      labels:',
      '        leasehold.io/inject: "true"',
      '```',
      '',
      'or, for a Deployment already running (its pods are replaced, injected):',
      '',
      '```sh',
      'kubectl patch deployment web --type merge \\',
      '  -p \'{"spec":{"template":{"metadata":{"labels":{"leasehold.io/inject":"true"}}}}}\'',
      '```',
      '',
      'On Kubernetes 1.36 and later the API server injects: `injection.mode` is `auto` by default, a',
      'MutatingAdmissionPolicy where the API server serves it, the webhook elsewhere. `helm template`',
      'asks no cluster: give it `--kube-version` (1.25.0 or later; without it Helm assumes v1.20 and',
      'the chart refuses that), and `auto` renders the webhook there unless also given',
      '`--api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy` with',
      '`--kube-version 1.36.0` or later (docs/operator.md, "Injection by MutatingAdmissionPolicy").',
      '',
      'cert-manager is not needed (the operator keeps its own CA); to use it for the webhook, set',
      '`certManager.enabled=true` (docs/operator.md, "Certificates").',
      '',
      '`helm uninstall` deletes the webhook configuration (or the policies) with the release; the',
      'operator never creates one, so nothing is left to refuse pods.',
    ],
  },
} as const;

export type ChartName = keyof typeof CHARTS;

interface Row {
  key: string;
  description: string;
}

/** The `# --` comments and the key each documents, as dotted paths by indentation. */
export function documentedKeys(valuesYaml: string): Row[] {
  const rows: Row[] = [];
  const path: { indent: number; key: string }[] = [];
  let pending: string[] | null = null;
  for (const line of valuesYaml.split('\n')) {
    const comment = /^\s*# -- ?(.*)$/.exec(line);
    if (comment) {
      pending = [comment[1]!];
      continue;
    }
    const more = /^\s*#\s?(.*)$/.exec(line);
    if (more) {
      if (pending) pending.push(more[1]!);
      continue;
    }
    const key = /^(\s*)([A-Za-z0-9_]+):/.exec(line);
    if (!key) continue;
    const indent = key[1]!.length;
    while (path.length > 0 && path.at(-1)!.indent >= indent) path.pop();
    path.push({ indent, key: key[2]! });
    if (pending) rows.push({ key: path.map((p) => p.key).join('.'), description: pending.join(' ').trim() });
    pending = null;
  }
  return rows;
}

type Schema = { type?: string | string[]; enum?: unknown[]; $ref?: string; properties?: Record<string, Schema>; definitions?: Record<string, Schema> };

function typeOf(schema: Schema, key: string): string {
  const deref = (n: Schema | undefined) => (n?.$ref ? (schema.definitions?.[n.$ref.replace('#/definitions/', '')] ?? n) : n);
  let node: Schema | undefined = schema;
  for (const part of key.split('.')) node = deref(deref(node)?.properties?.[part]);
  if (!node) return '';
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  return Array.isArray(node.type) ? node.type.join(' \\| ') : (node.type ?? '');
}

function defaultOf(values: Record<string, unknown>, key: string): string {
  let v: unknown = values;
  for (const part of key.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
  return '`' + JSON.stringify(v).replace(/\|/g, '\\|') + '`';
}

export function renderReadme(name: ChartName = 'leasehold'): string {
  const CHART = join(REPO, CHARTS[name].dir);
  const valuesYaml = readFileSync(join(CHART, 'values.yaml'), 'utf8');
  const values = load(valuesYaml) as Record<string, unknown>;
  const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Schema;
  const chart = load(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
    name: string;
    version: string;
    appVersion: string;
    description: string;
    kubeVersion: string;
  };
  const rows = documentedKeys(valuesYaml).map(
    (r) => `| \`${r.key}\` | ${typeOf(schema, r.key)} | ${defaultOf(values, r.key)} | ${r.description.replace(/\|/g, '\\|')} |`,
  );
  return [
    `# ${chart.name}`,
    '',
    `${chart.description}`,
    '',
    `Chart ${chart.version}, app ${chart.appVersion}, Kubernetes ${chart.kubeVersion}. Written by \`scripts/chart-readme.ts\` from`,
    `\`values.yaml\` and \`values.schema.json\`; do not edit by hand. ${CHARTS[name].usage[0]}`,
    ...CHARTS[name].usage.slice(1),
    '',
    '## Values',
    '',
    '| key | type | default | description |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const name of Object.keys(CHARTS) as ChartName[]) {
    const out = join(REPO, CHARTS[name].dir, 'README.md');
    const want = renderReadme(name);
    if (process.argv.includes('--check')) {
      let have = '';
      try {
        have = readFileSync(out, 'utf8');
      } catch {
        // missing: out of date
      }
      if (have !== want) {
        process.stderr.write(`${CHARTS[name].dir}/README.md is out of date: run npm run chart:readme\n`);
        process.exitCode = 1;
      }
    } else {
      writeFileSync(out, want);
      process.stdout.write(`wrote ${out}\n`);
    }
  }
}
