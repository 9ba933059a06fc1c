import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { StoreOpenError, UnauthorizedError, describeError } from '../errors.js';
import { resolveExecutable } from '../util/resolve-executable.js';

/**
 * Supplies the Authorization header for each request. Credentials that can change (a rotated
 * service-account token, an exec plugin's short-lived token) are refreshed here, so a sidecar
 * running for weeks never sends an expired one. Header values are never logged.
 */
export interface CredentialSource {
  /** The Authorization header value, or undefined to send none. */
  header(): Promise<string | undefined>;
  /** Forget any cached value (after a 401), so the next request fetches a fresh one. */
  invalidate(): void;
}

export function staticToken(token: string): CredentialSource {
  return { header: async () => `Bearer ${token}`, invalidate: () => {} };
}

export function basicAuth(username: string, password: string): CredentialSource {
  const value = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  return { header: async () => value, invalidate: () => {} };
}

/** How long a token read from a file is trusted before it is read again (client-go: one minute). */
export const TOKEN_FILE_REREAD_MS = 60_000;

/**
 * A token in a file, re-read at most every minute and after a 401. The kubelet rotates
 * projected service-account tokens (about hourly) by replacing the file.
 */
export function tokenFile(path: string, now: () => number = Date.now): CredentialSource {
  let cached: { value: string; readAt: number } | null = null;
  return {
    async header() {
      if (!cached || now() - cached.readAt >= TOKEN_FILE_REREAD_MS) {
        const token = readFileSync(path, 'utf8').trim();
        if (!token) throw new Error(`token file ${path} is empty`);
        cached = { value: `Bearer ${token}`, readAt: now() };
      }
      return cached.value;
    },
    invalidate() {
      cached = null;
    },
  };
}

/** What a plugin with provideClusterInfo: true is told of the cluster (client-go's ExecCredential spec.cluster). */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'certificate-authority-data'?: string;
  config?: unknown;
}

/** Refresh an exec plugin's token this long before its stated expiry. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;
const EXEC_TIMEOUT_MS = 30_000;

/**
 * A client.authentication.k8s.io exec credential plugin (aws eks get-token, gke-gcloud-auth-
 * plugin, kubelogin, ...): runs the command, reads an ExecCredential from its stdout and caches
 * status.token until status.expirationTimestamp (or until a 401). One run at a time; concurrent
 * requests wait for it. Plugins that answer with client certificates are refused with a
 * message, since the connection's certificate is fixed for the process.
 */
export function execPlugin(
  spec: Record<string, unknown>,
  kubeconfigDir: string,
  where: string,
  now: () => number = Date.now,
  cluster?: ExecClusterInfo,
): CredentialSource {
  const command = typeof spec.command === 'string' ? spec.command : '';
  if (!command) throw new StoreOpenError(`${where}: exec needs a command`);
  if (spec.interactiveMode === 'Always') {
    throw new StoreOpenError(
      `${where}: exec plugin ${command} sets interactiveMode: Always, but a sidecar has no terminal to answer it: use a plugin that runs without input`,
    );
  }
  const apiVersion = typeof spec.apiVersion === 'string' ? spec.apiVersion : 'client.authentication.k8s.io/v1';
  const args = Array.isArray(spec.args) ? spec.args.map(String) : [];
  const extraEnv = Object.fromEntries(
    (Array.isArray(spec.env) ? spec.env : [])
      .filter((e: unknown): e is { name: string; value: unknown } => typeof (e as { name?: unknown } | null)?.name === 'string')
      .map((e) => [e.name, typeof e.value === 'string' ? e.value : '']),
  );
  // client-go resolves a relative command that contains a path separator against the kubeconfig's folder.
  const file = !isAbsolute(command) && command.includes('/') ? join(kubeconfigDir, command) : command;
  const installHint = typeof spec.installHint === 'string' ? ` (${spec.installHint.trim()})` : '';
  // A plugin that is not there is a configuration error, found at start, not an outage retried forever.
  try {
    resolveExecutable(file);
  } catch (err) {
    throw new StoreOpenError(`${where}: exec credential plugin ${command} ${describeError(err).replace(/^cannot run "[^"]*": (it )?/, '')}${installHint}`, {
      cause: err,
    });
  }
  const execInfo = JSON.stringify({
    apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(spec.provideClusterInfo === true && cluster ? { cluster } : {}) },
  });
  let cached: { value: string; expiresAt: number } | null = null;
  let running: Promise<string> | null = null;

  const run = () =>
    new Promise<string>((resolvePromise, reject) => {
      const env = {
        ...process.env,
        ...extraEnv,
        KUBERNETES_EXEC_INFO: execInfo,
      };
      execFile(file, args, { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
        if (err) {
          // Never err.message: it quotes the whole command line, and arguments can be secrets.
          const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null; code?: string | number };
          const how =
            e.code === 'ENOENT'
              ? `not found${installHint}`
              : e.killed
                ? `timed out after ${EXEC_TIMEOUT_MS} ms`
                : e.signal
                  ? `killed by ${e.signal}`
                  : `exited with status ${String(e.code)}`;
          const said = stderr.trim().split('\n')[0];
          reject(new UnauthorizedError(`exec credential plugin ${command} failed: ${said ? `${how}: ${said}` : how}`));
          return;
        }
        let status: { token?: unknown; expirationTimestamp?: unknown; clientCertificateData?: unknown } | undefined;
        try {
          status = (JSON.parse(stdout) as { status?: typeof status }).status;
        } catch {
          reject(new UnauthorizedError(`exec credential plugin ${command} did not print an ExecCredential (JSON)`));
          return;
        }
        if (typeof status?.token !== 'string' || !status.token) {
          const why = status?.clientCertificateData ? 'returned a client certificate, which leasehold does not support' : 'returned no status.token';
          reject(new UnauthorizedError(`exec credential plugin ${command} ${why}`));
          return;
        }
        const expiry = typeof status.expirationTimestamp === 'string' ? Date.parse(status.expirationTimestamp) : NaN;
        const value = `Bearer ${status.token}`;
        cached = { value, expiresAt: Number.isFinite(expiry) ? expiry - EXEC_EXPIRY_MARGIN_MS : Infinity };
        resolvePromise(value);
      });
    });

  return {
    async header() {
      if (cached && now() < cached.expiresAt) return cached.value;
      running ??= run().finally(() => {
        running = null;
      });
      return running;
    },
    invalidate() {
      cached = null;
    },
  };
}
