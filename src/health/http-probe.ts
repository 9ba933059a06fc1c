import { http } from '../util/node-http.js';
import { escapeControl } from '../util/escape-control.js';
import { classifyError, healthy, unhealthy, type Probe, type ProbeResult } from './probe-result.js';

/** The kubelet reads at most this much of a probe's response body; so does this probe, then drops it. */
export const HTTP_BODY_LIMIT = 10 * 1024;
/** How much of a failing response's body its reason quotes. */
const REASON_BODY_CHARS = 120;

/**
 * The kubelet's httpGet probe, for an app in the same pod or on the same host: a GET to an
 * http:// URL (health-settings.ts refuses any other), healthy on a status from 200 to 399.
 * Redirects are not followed: a 3xx is itself a success, as the kubelet counts a redirect to
 * another host. The body is read up to HTTP_BODY_LIMIT and discarded, so an app that streams
 * without end cannot hold the probe or fill memory; the connection is never reused.
 */
export function httpProbe(url: string): Probe {
  const what = `GET ${url}`;
  return {
    description: `http ${what}`,
    run: (signal) =>
      new Promise<ProbeResult>((resolve) => {
        const req = http.request(url, {
          method: 'GET',
          agent: false,
          signal,
          headers: { 'user-agent': 'leasehold-probe', accept: '*/*', connection: 'close' },
        });
        req.on('error', (err) => resolve(classifyError(err, what)));
        req.on('response', (res) => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status < 400;
          let read = 0;
          let head = '';
          const finish = () => {
            res.destroy();
            req.destroy();
            if (ok) return resolve(healthy());
            const body = escapeControl(head.slice(0, REASON_BODY_CHARS).replace(/\s+/g, ' ')).trim();
            resolve(unhealthy(`${what}: status ${status}${body ? `: ${body}` : ''}`));
          };
          res.on('data', (chunk: Buffer) => {
            if (head.length < REASON_BODY_CHARS) head += chunk.toString('utf8', 0, Math.min(chunk.length, REASON_BODY_CHARS));
            read += chunk.length;
            if (read >= HTTP_BODY_LIMIT) finish();
          });
          res.on('end', finish);
          res.on('error', finish);
        });
        req.end();
      }),
  };
}
