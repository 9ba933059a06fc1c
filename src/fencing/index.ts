/** App-side helpers: read the status volume safely, and check fencing tokens at the resource. */
export { readLeadership, type LeadershipView } from '../status/status-reader.js';
export { FencedSqliteResource, type FencedWrite, type ResourceValue } from './fenced-resource.js';
