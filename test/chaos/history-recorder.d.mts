/** Types of history-recorder.mjs (plain JavaScript, so the built CLI can load it too). */
export type HistoryModel = 'register' | 'fenced' | 'set';

export interface HistoryFile {
  call(model: HistoryModel, key: string, op: string, input?: object): number;
  done(id: number, output: object): void;
  stamp(): bigint;
  whole(model: HistoryModel, key: string, op: string, input: object | undefined, callStamp: bigint, output: object): void;
  close(): void;
}

export function openHistory(dir: string, prefix: string): HistoryFile;
