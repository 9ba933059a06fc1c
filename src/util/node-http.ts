/**
 * node:http, loaded with require rather than an ESM import. An ESM import builds the module's
 * namespace from every export, which runs node:http's lazy WebSocket, CloseEvent and
 * MessageEvent getters and so loads undici: on Node 24, node:http imported that way costs more
 * resident memory than node:http by require and node:https together, for nothing the sidecar
 * uses (docs/benchmarks.md, "Where the memory goes"). Types still come from
 * `import type`, which emits nothing.
 */
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

export const http = createRequire(import.meta.url)('node:http') as typeof Http;
