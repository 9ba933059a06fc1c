/**
 * The app beside one chaos candidate. Every 20 ms it reads its sidecar's status volume; while
 * that says leader (validUntil ahead) it takes the token, "works" for 30 ms, then writes to the
 * shared fenced resource with the token it read. A pause (SIGSTOP) inside that window makes
 * it write late with an old token, as a real app would. One JSON line per write on stdout:
 * {"token","accepted"}.
 *   chaos-app.ts <statusDir> <resource.db> <identity>
 */
import { readLeadership } from '../../src/status/status-reader.js';
import { FencedSqliteResource } from '../../src/fencing/fenced-resource.js';

const [statusDir, resourcePath, id] = process.argv.slice(2);
const resource = new FencedSqliteResource(resourcePath!);
let seq = 0;
let busy = false;
setInterval(() => {
  if (busy) return;
  const view = readLeadership(statusDir!);
  if (!view.isLeader) return;
  busy = true;
  const token = view.fencingToken!;
  setTimeout(() => {
    const r = resource.write(`${id}#${seq++}`, id!, token);
    process.stdout.write(JSON.stringify({ token, accepted: r.accepted }) + '\n');
    busy = false;
  }, 30);
}, 20);
process.on('SIGTERM', () => {
  resource.close();
  process.exit(0);
});
