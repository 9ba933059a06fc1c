/**
 * Whether a health probe (--health-http, --health-tcp) would reach this sidecar's own --listen
 * address rather than the app: then the "app's health" is leasehold's own, and /readyz, which
 * answers 503 until this candidate leads, would keep it from ever leading. Addresses are
 * compared as the kernel routes them: a listener on 0.0.0.0 takes every IPv4 address of this
 * machine (127.0.0.1, localhost, its interfaces' and host name), one on :: every address, and a
 * probe of 0.0.0.0 or localhost reaches this machine's loopback. Another host name is compared
 * as written (resolving it would take a lookup, and a name is rarely both).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import type { ProbeTarget } from '../src/health/health-settings.js';

/** Default of --health-tcp's host (src/health/health-settings.ts). */
const TCP_DEFAULT_HOST = '127.0.0.1';

/**
 * A host as the kernel takes it: without brackets, lower case, an IPv6 address in its one
 * short form (a URL's, `0:0:0:0:0:0:0:1` as `::1`), and an IPv4-mapped one as the IPv4 address
 * it reaches, whether written dotted (`::ffff:127.0.0.1`) or in hex (`::ffff:7f00:1`, as a URL
 * writes it).
 */
function bare(host: string): string {
  let h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (isIPv6(h)) h = new URL(`http://[${h}]/`).hostname.slice(1, -1);
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
  if (dotted) return dotted[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (!hex) return h;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** The host and port a probe connects to, or undefined for a command (or a URL it cannot read). */
function probeEndpoint(probe: ProbeTarget): { host: string; port: number } | undefined {
  if ('tcp' in probe) return { host: probe.tcp.host ?? TCP_DEFAULT_HOST, port: probe.tcp.port };
  if (!('http' in probe)) return undefined;
  try {
    const url = new URL(probe.http);
    return { host: url.hostname, port: url.port === '' ? 80 : Number(url.port) };
  } catch {
    return undefined;
  }
}

/** The addresses connecting to `host` reaches: 0.0.0.0 and :: reach this machine's loopback. */
function reachedBy(host: string): string[] {
  const h = bare(host);
  if (h === 'localhost' || h.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  if (h === '0.0.0.0') return ['127.0.0.1'];
  if (h === '::') return ['::1'];
  return [h];
}

/** Whether `address` (bare, or a host name) is this machine's. */
function isOwn(address: string): boolean {
  if ((isIPv4(address) && address.startsWith('127.')) || address === '::1') return true;
  if (address === hostname().toLowerCase()) return true;
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => bare(i.address) === address));
}

/** Whether a listener bound to `listenHost` takes connections to `address`. */
function listenerTakes(listenHost: string, address: string): boolean {
  const l = bare(listenHost);
  if (l === '0.0.0.0') return isOwn(address) && !isIPv6(address);
  if (l === '::') return isOwn(address);
  return reachedBy(l).includes(address);
}

/** Whether `probe` would connect to the listener on `listen` (this sidecar's --listen). */
export function probesOwnListener(listen: { host: string; port: number }, probe: ProbeTarget): boolean {
  const target = probeEndpoint(probe);
  if (!target || listen.port === 0 || target.port !== listen.port) return false;
  return reachedBy(target.host).some((address) => listenerTakes(listen.host, address));
}
