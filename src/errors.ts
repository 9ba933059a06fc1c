/**
 * Every error leasehold raises on purpose is a LeaseholdError with a stable `code`
 * (`LEASEHOLD_ERR_*`), listed in docs/errors.md. Callers branch on `code`, never on the
 * message; the original failure (an SQLite or HTTP error) is kept as `cause`.
 */
export class LeaseholdError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A compare-and-swap lost: the record changed (or appeared) since it was read. */
export class ConflictError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_CONFLICT', message, options);
  }
}

/** An update targeted a lease record that does not exist (deleted under us). */
export class NotFoundError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_NOT_FOUND', message, options);
  }
}

/**
 * A flag, option or configuration value breaks a rule; the message names the value and the rule.
 * `field` names the option when one is at fault (`leaseDuration`, `identity`), and `rule` is the
 * rule alone, without the value: the CLI names its own flag from them.
 */
export class InvalidConfigError extends LeaseholdError {
  readonly field: string | undefined;
  readonly rule: string | undefined;
  constructor(message: string, options?: { cause?: unknown; field?: string; rule?: string }) {
    super('LEASEHOLD_ERR_INVALID_CONFIG', message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.field = options?.field;
    this.rule = options?.rule;
  }
}

/**
 * The lease store could not be opened (not an SQLite file, unreadable kubeconfig, ...). `field`
 * names the setting at fault when one is (`db`, `kubeconfig`): the CLI names its own flag from it.
 */
export class StoreOpenError extends LeaseholdError {
  readonly field: string | undefined;
  constructor(message: string, options?: { cause?: unknown; field?: string }) {
    super('LEASEHOLD_ERR_STORE_OPEN', message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.field = options?.field;
  }
}

/**
 * The store found that its file was replaced or deleted under it and reopened the path. What
 * this process read before says nothing about the new file, and a record may have been
 * created and lost with the old one unseen, so the operation that found it fails once: the
 * elector starts any wait for an absent lease over from this moment.
 */
export class StoreReopenedError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_STORE_REOPENED', message, options);
  }
}

/** The backend did not answer in time or is temporarily unable to (SQLITE_BUSY, 5xx, 429, timeouts). */
export class BackendUnavailableError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_BACKEND_UNAVAILABLE', message, options);
  }
}

/** The backend refused the request for lack of credentials (HTTP 401). */
export class UnauthorizedError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_UNAUTHORIZED', message, options);
  }
}

/** The backend refused the request by policy (HTTP 403, RBAC); the message names verb and resource. */
export class ForbiddenError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_FORBIDDEN', message, options);
  }
}

/** The backend rejected the record as invalid (HTTP 422, a CHECK constraint). */
export class InvalidRecordError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_INVALID_RECORD', message, options);
  }
}

/**
 * A record's name is taken by an object leasehold did not write as that record (a Lease named as
 * a shard group's record but without the group's labels: someone else's). It is never
 * overwritten; a person renames one of the two.
 */
export class ForeignRecordError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_FOREIGN_RECORD', message, options);
  }
}

/** Any other backend failure; `cause` holds the original error. */
export class BackendError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_BACKEND', message, options);
  }
}

/** The status directory cannot be created or written; `field` is `statusDir`, for the CLI to name its flag. */
export class StatusDirError extends LeaseholdError {
  readonly field = 'statusDir';
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_STATUS_DIR', message, options);
  }
}

/**
 * The status directory is written by another running sidecar (src/sidecar/status-dir-claim.ts):
 * two writers of one directory would take turns on its files. A StatusDirError (its code, its
 * `field`), so the CLI refuses it as bad input, exit 2; `instanceof` tells it apart.
 */
export class StatusDirInUseError extends StatusDirError {}

/** A fenced write carried a token lower than one the resource already accepted. */
export class StaleTokenError extends LeaseholdError {
  readonly presented: number;
  readonly highest: number;
  /** The fence key refused (absent for the tutorial's one-row demo table, which has none). */
  readonly key: string | undefined;
  constructor(presented: number, highest: number, key?: string) {
    super(
      'LEASEHOLD_ERR_STALE_TOKEN',
      key === undefined
        ? `fencing token ${presented} is behind the highest token this resource has accepted (${highest})`
        : `fencing token ${presented} for key ${JSON.stringify(key)} is behind the highest token accepted for it (${highest}): a newer writer holds the term; nothing was written`,
    );
    this.presented = presented;
    this.highest = highest;
    this.key = key;
  }
}

/** `leasehold run` could not start its command (missing, not executable). */
export class CommandStartError extends LeaseholdError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('LEASEHOLD_ERR_COMMAND_START', message, options);
  }
}

export function isLeaseholdError(err: unknown, code?: string): err is LeaseholdError {
  return err instanceof LeaseholdError && (code === undefined || err.code === code);
}

/** One line for logs and CLI output: the message, plus the cause's message when it adds something. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message}: ${cause}` : err.message;
}
