import { readFileSync, readdirSync } from 'node:fs';
import { DEFAULT_MAX_STREAMS } from './leader-stream.js';

/**
 * Connections kept beside a full set of streams: kubelet's probes and Prometheus' scrapes
 * still find a place when every stream is open.
 */
export const ROOM_FOR_REQUESTS = 64;
/**
 * Descriptors kept for everything but HTTP, beyond those open when the server is set up: the
 * store's (a PostgreSQL pool, a Kubernetes watch and requests), the status files' writes, a
 * pod label request. Without them, readers could take the descriptors the election needs.
 */
export const ROOM_FOR_THE_REST = 64;

export interface HttpBounds {
  /** Open connections at once, streams included; one more is closed as it arrives. */
  maxConnections: number;
  maxStreams: number;
}

/**
 * The process's soft limit on open files (RLIMIT_NOFILE), from /proc/self/limits; null where
 * it cannot be read (not Linux) or is unlimited. Node raises the soft limit to the hard one at
 * start, so this is the hard limit it was started with.
 */
export function openFilesLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | null {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(read());
    const n = Number(m?.[1]);
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/** Descriptors this process has open now; null where it cannot tell. */
export function openDescriptors(list: () => string[] = () => readdirSync('/proc/self/fd')): number | null {
  try {
    return list().length;
  } catch {
    return null;
  }
}

/**
 * The HTTP server's bounds: the streams' own bound plus ROOM_FOR_REQUESTS, and below the
 * descriptors left (`limit` − `open` − ROOM_FOR_THE_REST), so neither streams nor half-sent
 * requests can exhaust the descriptors the store and the status files need. With few
 * descriptors left, half of the connections stay for requests other than streams.
 */
export function httpBounds(limit: number | null, open: number | null, maxStreams = DEFAULT_MAX_STREAMS): HttpBounds {
  let maxConnections = maxStreams + ROOM_FOR_REQUESTS;
  if (limit !== null) maxConnections = Math.min(maxConnections, limit - (open ?? 0) - ROOM_FOR_THE_REST);
  // 0 would mean "no bound" to node:http.
  maxConnections = Math.max(2, maxConnections);
  return { maxConnections, maxStreams: Math.min(maxStreams, maxConnections - Math.min(ROOM_FOR_REQUESTS, Math.ceil(maxConnections / 2))) };
}
