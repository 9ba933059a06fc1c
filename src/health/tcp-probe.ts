import { connect } from 'node:net';
import { classifyError, healthy, type Probe, type ProbeResult } from './probe-result.js';

/** The kubelet's tcpSocket probe: healthy once a connection is established; it is closed at once. */
export function tcpProbe(host: string, port: number): Probe {
  const what = `connect to ${host}:${port}`;
  return {
    description: `tcp ${host}:${port}`,
    run: (signal) =>
      new Promise<ProbeResult>((resolve) => {
        const socket = connect({ host, port });
        const onAbort = () => socket.destroy();
        signal.addEventListener('abort', onAbort, { once: true });
        const done = (r: ProbeResult) => {
          signal.removeEventListener('abort', onAbort);
          socket.destroy();
          resolve(r);
        };
        socket.once('connect', () => done(healthy()));
        socket.once('error', (err) => done(classifyError(err, what)));
      }),
  };
}
