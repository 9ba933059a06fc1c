/**
 * The app beside one chaos candidate. Every 20 ms it reads its sidecar's status volume; while
 * that says leader (validUntil ahead) it takes the token, "works" for 30 ms, then writes to the
 * shared fenced resource with the token it read. A pause (SIGSTOP) inside that window makes
 * it write late with an old token, as a real app would. One JSON line per write on stdout:
 * {"token","accepted"}. With LEASEHOLD_TEST_HISTORY_DIR set, each write is also recorded as a
 * fenced register's operation (docs/testing.md "Recorded histories"), in `app-PID.jsonl`.
 *   chaos-app.ts <statusDir> <resource.db> <identity>
 */
import { readLeadership } from '../../src/status/status-reader.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';
import { openHistory } from './history-recorder.mjs';

/** The one fenced resource's key in the recorded history (run-chaos.ts reads it back under it). */
const RESOURCE_KEY = 'resource';
const [statusDir, resourcePath, id] = process.argv.slice(2);
const resource = new FencedSqliteResource(resourcePath!);
const historyDir = process.env.LEASEHOLD_TEST_HISTORY_DIR;
const history = historyDir ? openHistory(historyDir, 'app') : undefined;
let seq = 0;
let busy = false;
setInterval(() => {
  if (busy) return;
  const view = readLeadership(statusDir!);
  if (!view.isLeader) return;
  busy = true;
  const token = view.fencingToken!;
  setTimeout(() => {
    const value = `${id}#${seq++}`;
    const call = history?.call('fenced', RESOURCE_KEY, 'write', { token, value });
    const r = resource.write(value, id!, token);
    if (call !== undefined) history!.done(call, { accepted: r.accepted });
    process.stdout.write(JSON.stringify({ token, accepted: r.accepted }) + '\n');
    busy = false;
  }, 30);
}, 20);
process.on('SIGTERM', () => {
  resource.close();
  process.exit(0);
});
