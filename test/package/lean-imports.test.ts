/**
 * What the sidecar loads stays lean: an ESM import of node:http runs its lazy WebSocket getters,
 * which load undici (docs/benchmarks.md, "Where the memory goes") for nothing the sidecar uses. The built
 * HTTP client and server must get node:http through src/util/node-http.ts instead. Fails on the
 * Node 24 tier (the image's Node) if any module imports node:http directly again.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from '../support/cli.js';

describe("the sidecar's imports", () => {
  it('loading the CLI, the HTTP server and the Kubernetes client does not load undici', () => {
    const modules = ['dist/cmd/sidecar-command.js', 'dist/src/sidecar/http-server.js', 'dist/src/kube/api-client.js', 'dist/src/backends/kubernetes/store.js'];
    const code = `${modules.map((m) => `await import(${JSON.stringify(join(REPO, m))});`).join('')}
console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', cwd: REPO });
    assert.deepEqual(JSON.parse(out.trim().split('\n').at(-1)!), [], `undici was loaded on Node ${process.version}`);
  });
});
