/**
 * A command's flags as a plain table: yargs builds its parser from it (`y.options(TABLE)`), and
 * cmd/sidecar-fast-path.ts reads the same table without loading yargs. Only the kinds of flag
 * the fast path understands fit here: a string or a boolean, with an optional default.
 */
export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly default?: string | boolean;
  readonly describe: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;
