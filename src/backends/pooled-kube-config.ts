import { Agent as HttpsAgent, type AgentOptions } from 'node:https';
import { Agent as HttpAgent } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A KubeConfig whose requests share one keep-alive agent. client-node 1.4 builds a new agent
 * for every request, so every renewal paid a fresh TCP + TLS handshake (CPU on both ends and
 * tens of milliseconds on a busy machine). Renewals every retryPeriod and a long-lived watch
 * are exactly the traffic keep-alive is for. Credentials in headers (tokens, exec plugins) are
 * still applied per request; client certificates are fixed for the agent's life, as they are
 * for the process's kubeconfig anyway. Proxies keep client-node's own agents.
 */
export class PooledKubeConfig extends KubeConfig {
  private pooled: HttpsAgent | HttpAgent | null = null;

  constructor() {
    super();
    const self = this as unknown as { createAgent: (cluster: { proxyUrl?: string; server?: string }, opts: AgentOptions) => unknown };
    const original = self.createAgent.bind(this);
    self.createAgent = (cluster, opts) => {
      if (cluster?.proxyUrl) return original(cluster, opts);
      if (!this.pooled) {
        const options = { ...opts, keepAlive: true, maxSockets: 8, maxFreeSockets: 2 };
        this.pooled = cluster?.server?.startsWith('http:') ? new HttpAgent(options) : new HttpsAgent(options);
      }
      return this.pooled;
    };
  }
}
