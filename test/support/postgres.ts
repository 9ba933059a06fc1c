/**
 * A real PostgreSQL server for the tests (Debian's `postgresql` package, which scripts/setup.sh
 * installs): a fresh cluster in a temporary directory, on a loopback port and a unix socket in
 * that directory, stopped and removed by `stop()`. PostgreSQL refuses to run as root, so under
 * root the server runs as `nobody` (setpriv), owning only its directory.
 *
 * Roles: `postgres` (superuser, password auth over TCP), `leasehold` (may create tables in its
 * own database `leases`), `reader` (may connect, owns nothing: no permission on the table).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { freePort } from './control-plane.js';
import { join } from 'node:path';

export interface PostgresServer {
  port: number;
  /** The CA that signed the server's certificate (TLS is on; plain TCP is accepted too). */
  caFile: string;
  /** The server's version, e.g. "15.14". */
  version: string;
  dir: string;
  /** postgres://USER:PASSWORD@127.0.0.1:PORT/leases for a role. */
  url: (role?: 'leasehold' | 'reader' | 'postgres', password?: string) => string;
  /** Runs SQL as the superuser (psql over TCP); returns its output. */
  sql: (statement: string, database?: string) => string;
  /** Stops the server (fast shutdown: connections are cut), keeping the data. */
  stopServer: () => Promise<void>;
  /** Starts it again on the same port and data. */
  startServer: () => Promise<void>;
  /** Stops it and removes everything. */
  stop: () => Promise<void>;
}

export const PASSWORDS = { postgres: 'su-secret-7', leasehold: 'lh-secret-42', reader: 'rd-secret-9' } as const;

/** The server binaries: Debian puts them under /usr/lib/postgresql/<major>/bin. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const m of majors) if (existsSync(join(root, m, 'bin', 'postgres'))) return join(root, m, 'bin');
  throw new Error('PostgreSQL is not installed: run scripts/setup.sh (Debian package postgresql)');
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBin();
  const dir = mkdtempSync('/tmp/leasehold-pg-');
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  // Under root: run as nobody, who must own the directory it writes.
  const wrap = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', cmd, ...args]] : [cmd, args];
  if (asRoot) {
    chownSync(dir, 65534, 65534);
    chmodSync(dir, 0o700);
  }
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${PASSWORDS.postgres}\n`);
  if (asRoot) chownSync(pwfile, 65534, 65534);
  const [initCmd, initArgs] = wrap(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--pwfile',
    pwfile,
    '--auth-host=scram-sha-256',
    '--auth-local=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initCmd, initArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  rmSync(pwfile);
  // TLS with a certificate for 127.0.0.1 from a CA of our own, so sslmode can be tested.
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=leasehold-test-ca']);
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'san.ext',
  ]);
  chmodSync(join(dir, 'server.key'), 0o600);
  if (asRoot) for (const f of ['server.key', 'server.crt']) chownSync(join(dir, f), 65534, 65534);
  const port = await freePort();
  let server: ChildProcess | null = null;

  const startServer = async () => {
    const [cmd, args] = wrap(join(bin, 'postgres'), [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=on',
      '-c',
      'ssl=on',
      '-c',
      `ssl_cert_file=${join(dir, 'server.crt')}`,
      '-c',
      `ssl_key_file=${join(dir, 'server.key')}`,
    ]);
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (d: Buffer) => (log += d.toString()));
    server = child;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited at start: ${log.slice(-2000)}`);
      try {
        execFileSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`postgres did not become ready: ${log.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stopServer = async () => {
    const child = server;
    server = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGINT'); // fast shutdown: roll back and disconnect everyone
    await exited;
  };
  const sql = (statement: string, database = 'postgres') =>
    execFileSync(
      join(bin, 'psql'),
      ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-c', statement],
      {
        encoding: 'utf8',
        env: { ...process.env, PGPASSWORD: PASSWORDS.postgres },
      },
    );

  try {
    await startServer();
    sql(`CREATE ROLE leasehold LOGIN PASSWORD '${PASSWORDS.leasehold}'`);
    sql(`CREATE ROLE reader LOGIN PASSWORD '${PASSWORDS.reader}'`);
    sql('CREATE DATABASE leases OWNER leasehold');
  } catch (err) {
    await stopServer();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const version = /(\d+\.\d+)/.exec(execFileSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }))?.[1] ?? '?';
  return {
    port,
    caFile: join(dir, 'ca.crt'),
    version,
    dir,
    url: (role = 'leasehold', password) => `postgres://${role}:${encodeURIComponent(password ?? PASSWORDS[role])}@127.0.0.1:${port}/leases`,
    sql,
    stopServer,
    startServer,
    stop: async () => {
      await stopServer();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
