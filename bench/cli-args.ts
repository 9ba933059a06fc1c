/** `--name value` options for the bench and chaos scripts. */
export function option(name: string, dflt: string, args = process.argv.slice(2)): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
}

export const numberOption = (name: string, dflt: number): number => Number(option(name, String(dflt)));
