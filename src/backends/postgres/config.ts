/**
 * The PostgreSQL store's settings, checked without loading the driver (the CLI checks them
 * before anything else): the table name, the URL, and how to name the target in messages
 * without its password.
 */
import { accessSync, constants } from 'node:fs';
import type { ClientConfig } from 'pg';
import { InvalidConfigError } from '../../errors.js';

export const DEFAULT_POSTGRES_TABLE = 'public.leases';

const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;
const TABLE_RULE = 'must be table or schema.table, each a lowercase SQL identifier (letters, digits, _; at most 63 characters)';

/** Parses `schema.table` (lowercase SQL identifiers); InvalidConfigError naming the rule. */
export function parseTableName(text: string): { schema: string; table: string } {
  const parts = text.split('.');
  const [schema, table] = parts.length === 1 ? ['public', parts[0]!] : parts.length === 2 ? [parts[0]!, parts[1]!] : ['', ''];
  if (!IDENT.test(schema) || !IDENT.test(table)) {
    throw new InvalidConfigError(`invalid PostgreSQL table ${JSON.stringify(text)}: ${TABLE_RULE}`, { field: 'postgresTable', rule: TABLE_RULE });
  }
  return { schema, table };
}

/** What a connection is for, without its password: user@host:port/database. */
export function describeTarget(config: ClientConfig): string {
  let fromUrl: { user?: string; host?: string; port?: number; database?: string } = {};
  if (config.connectionString) {
    try {
      const u = new URL(config.connectionString);
      fromUrl = {
        user: u.username ? decodeURIComponent(u.username) : undefined,
        host: u.hostname || undefined,
        port: u.port ? Number(u.port) : undefined,
        database: u.pathname.length > 1 ? decodeURIComponent(u.pathname.slice(1)) : undefined,
      };
    } catch {
      // checked by clientConfig already
    }
  }
  const host = fromUrl.host ?? config.host ?? process.env.PGHOST ?? 'localhost';
  const port = fromUrl.port ?? config.port ?? (process.env.PGPORT ? Number(process.env.PGPORT) : 5432);
  const user = fromUrl.user ?? config.user ?? process.env.PGUSER ?? process.env.USER ?? 'root';
  const db = fromUrl.database ?? config.database ?? process.env.PGDATABASE ?? user;
  return `${user}@${host}:${port}/${db}`;
}

/**
 * The client settings from a URL, refusing a malformed one without echoing it (it may hold a
 * password), an sslmode node-postgres does not know, and a certificate or key file it cannot read.
 */
export function clientConfig(url: string | undefined, connectTimeoutMs: number, env: NodeJS.ProcessEnv = process.env): ClientConfig {
  const base: ClientConfig = { connectionTimeoutMillis: connectTimeoutMs, application_name: 'leasehold' };
  checkTls(env.PGSSLMODE, 'PGSSLMODE');
  if (url === undefined || url === '') return base;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidConfigError('invalid PostgreSQL URL: not a URL; expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]', {
      field: 'postgresUrl',
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new InvalidConfigError(`invalid PostgreSQL URL: the scheme must be postgres:// or postgresql://, got ${parsed.protocol}//`, {
      field: 'postgresUrl',
    });
  }
  checkTls(parsed.searchParams.get('sslmode'), 'sslmode in the PostgreSQL URL', 'postgresUrl');
  for (const param of ['sslrootcert', 'sslcert', 'sslkey']) {
    const file = parsed.searchParams.get(param);
    if (file === null) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      const why = (err as { code?: string }).code === 'ENOENT' ? 'no such file' : 'it cannot be read';
      throw new InvalidConfigError(`invalid ${param} in the PostgreSQL URL: ${JSON.stringify(file)}: ${why}; it must be a readable PEM file`, {
        field: 'postgresUrl',
      });
    }
  }
  return { ...base, connectionString: withoutSslAlias(url, parsed) };
}

/**
 * node-postgres treats sslmode prefer, require and verify-ca as verify-full, and says so in a
 * nine-line process warning on every start. Naming verify-full keeps that exact behaviour
 * (docs/postgres.md) without the warning; `uselibpqcompat=true` asks for libpq's meanings and
 * is left as given.
 */
function withoutSslAlias(url: string, parsed: URL): string {
  if (parsed.searchParams.get('uselibpqcompat') === 'true') return url;
  return url.replace(/([?&])sslmode=(prefer|require|verify-ca)(?=&|#|$)/, '$1sslmode=verify-full');
}

/** The sslmode values node-postgres knows; any other it would silently treat as TLS (or, from PGSSLMODE, as no TLS). */
export const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'] as const;

function checkTls(mode: string | null | undefined, where: string, field?: string): void {
  if (mode === null || mode === undefined || mode === '') return;
  if (!(SSL_MODES as readonly string[]).includes(mode)) {
    throw new InvalidConfigError(
      `invalid ${where}: ${JSON.stringify(mode.slice(0, 40))}: must be one of ${SSL_MODES.join(', ')}`,
      field === undefined ? undefined : { field },
    );
  }
}
