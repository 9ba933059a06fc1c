import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fenceBindingFor, fenceBindingName, fenceOf, parseFencedKinds, unionOfKinds, type FencedKind } from './fence-objects.js';
import { INSTALLATION_LABEL, MANAGED_BY } from './rbac.js';

const INSTALL = 'ops.leasehold-operator';
const POLICY = 'leasehold-operator.ops.operator-fencing.leasehold.io';

test('leasehold.io/fence-objects: each accepted spelling and the kinds it names', () => {
  const table: [string, FencedKind[]][] = [
    ['configmaps', [{ group: '', resource: 'configmaps' }]],
    ['deployments.apps', [{ group: 'apps', resource: 'deployments' }]],
    [
      'configmaps, deployments.apps,widgets.example.com',
      [
        { group: '', resource: 'configmaps' },
        { group: 'apps', resource: 'deployments' },
        { group: 'example.com', resource: 'widgets' },
      ],
    ],
    ['network-policies.networking.k8s.io', [{ group: 'networking.k8s.io', resource: 'network-policies' }]],
  ];
  for (const [text, kinds] of table) assert.deepEqual(parseFencedKinds(text), kinds, text);
});

test('leasehold.io/fence-objects: each refused value, in one line naming the annotation and the rule', () => {
  const table: [string, RegExp][] = [
    ['', /"" is invalid: must be a comma-separated list of resources/],
    ['configmaps,', /must be a comma-separated list of resources/],
    ['*', /"\*": no wildcard; name each kind to fence/],
    ['*.apps', /no wildcard/],
    ['deployments.apps/scale', /"deployments.apps\/scale": a subresource cannot be fenced/],
    ['ConfigMaps', /"ConfigMaps" is not a resource name \(lowercase plural/],
    ['configmap_s', /is not a resource name/],
    ['deployments.Apps', /"Apps" is not an API group/],
    ['deployments..apps', /is not an API group/],
    ['configmaps,configmaps', /"configmaps" is named twice/],
    [Array.from({ length: 17 }, (_, i) => `k${i}s`).join(','), /names 17 kinds; at most 16/],
  ];
  for (const [text, rule] of table) {
    assert.throws(
      () => parseFencedKinds(text),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'LEASEHOLD_ERR_INVALID_CONFIG');
        assert.ok(e.message.startsWith(`annotation leasehold.io/fence-objects ${JSON.stringify(text)} is invalid: `), e.message);
        assert.match(e.message, rule);
        assert.ok(!e.message.includes('\n'));
        return true;
      },
      text,
    );
  }
});

test("a binding fences only the pod's namespace, only objects labelled for its Lease, only the kinds named, namespaced ones", () => {
  const b = fenceBindingFor({
    installation: INSTALL,
    policy: POLICY,
    namespace: 'payments',
    lease: 'billing',
    kinds: parseFencedKinds('deployments.apps,configmaps'),
  });
  assert.deepEqual(b, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: {
      name: fenceBindingName(INSTALL, 'payments', 'billing'),
      labels: { [MANAGED_BY.key]: MANAGED_BY.value, [INSTALLATION_LABEL]: INSTALL },
      annotations: { 'leasehold.io/namespace': 'payments', 'leasehold.io/lease': 'billing' },
    },
    spec: {
      policyName: POLICY,
      validationActions: ['Deny'],
      paramRef: { name: 'billing', namespace: 'payments', parameterNotFoundAction: 'Deny' },
      matchResources: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'payments' } },
        objectSelector: { matchLabels: { 'leasehold.io/fenced-by': 'billing' } },
        resourceRules: [
          { apiGroups: [''], apiVersions: ['*'], resources: ['configmaps'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
          { apiGroups: ['apps'], apiVersions: ['*'], resources: ['deployments'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: 'Namespaced' },
        ],
      },
    },
  });
});

test("binding names: prefixed, readable, one per install, namespace and Lease; never over an object name's 253", () => {
  const name = fenceBindingName(INSTALL, 'payments', 'billing');
  assert.match(name, /^leasehold-fence\.payments\.billing\.[0-9a-f]{10}$/);
  const others = [
    fenceBindingName('ops-b.leasehold-operator', 'payments', 'billing'),
    fenceBindingName(INSTALL, 'payments', 'billing2'),
    fenceBindingName(INSTALL, 'payments2', 'billing'),
    // The same text split differently: the hash keeps them apart.
    fenceBindingName(INSTALL, 'a', 'b.c'),
    fenceBindingName(INSTALL, 'a.b', 'c'),
  ];
  assert.equal(new Set([name, ...others]).size, others.length + 1);
  assert.ok(fenceBindingName(INSTALL, 'n'.repeat(63), 'l'.repeat(63)).length <= 253);
});

test('the kinds of several pods of one Lease: once each, in one order, so the binding compares equal whatever the pods order', () => {
  const a = parseFencedKinds('configmaps,deployments.apps');
  const b = parseFencedKinds('secrets,configmaps');
  assert.deepEqual(unionOfKinds(a, b), unionOfKinds(b, a));
  assert.deepEqual(
    unionOfKinds(a, b).map((k) => `${k.resource}.${k.group}`),
    ['configmaps.', 'deployments.apps', 'secrets.'],
  );
  const spec = { installation: INSTALL, policy: POLICY, namespace: 'n', lease: 'l' };
  const one = fenceBindingFor({ ...spec, kinds: unionOfKinds(a, b) });
  const two = fenceBindingFor({ ...spec, kinds: unionOfKinds(b, a) });
  assert.equal(fenceOf(one), fenceOf(two));
  // What the API server adds (matchPolicy, metadata) changes nothing; another kind does.
  const served = structuredClone(one) as typeof one & { spec: { matchResources: { matchPolicy?: string } } };
  served.spec.matchResources.matchPolicy = 'Equivalent';
  assert.equal(fenceOf(served), fenceOf(one));
  assert.notEqual(fenceOf(fenceBindingFor({ ...spec, kinds: a })), fenceOf(one));
});

test("the operator chart's fencing rules are the leasehold chart's, word for word (a chart reads only its own files)", () => {
  const rules = (chart: string) => readFileSync(new URL(`../../deploy/helm/${chart}/files/fencing-rules.yaml`, import.meta.url), 'utf8');
  assert.equal(rules('leasehold-operator'), rules('leasehold'));
});
