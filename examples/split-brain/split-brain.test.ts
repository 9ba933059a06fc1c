import { it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSplitBrainDemo } from './split-brain.js';

const dir = mkdtempSync(join(tmpdir(), 'leasehold-split-brain-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it("the tutorial's steps 5 and 6: the unfenced stale write corrupts, the fenced one is rejected", async () => {
  const lines: string[] = [];
  const o = await runSplitBrainDemo(dir, (l) => lines.push(l));
  assert.ok(o.tokenB > o.tokenA);
  assert.deepEqual(o.unfenced, { value: "A's STALE value", writtenBy: 'candidate-a' }, 'step 5: the stale write silently won');
  assert.equal(o.fenced.accepted, false);
  assert.match(o.fenced.reason, new RegExp(`fencing token ${o.tokenA} is behind the highest token this resource has accepted \\(${o.tokenB}\\)`));
  assert.deepEqual([o.fenced.value, o.fenced.writtenBy], ["B's fresh value", 'candidate-b'], "step 6: B's value stays");
  assert.ok(lines.some((l) => l.startsWith("A's write: rejected")));
});
