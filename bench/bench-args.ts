/**
 * Command-line options for the bench scripts: node's `parseArgs`, plus what a person at a
 * terminal expects from it. `--help` prints the script's option summary and exits 0; an unknown
 * option or a missing value prints one line naming it, then the summary, and exits 2 — instead
 * of node's stack trace.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The parsed values of `options`; `usage` is the script's one-paragraph option summary. */
export function parseBenchArgs<const T extends Options>(
  options: T,
  usage: string,
  argv: readonly string[] = process.argv.slice(2),
): ReturnType<typeof parseArgs<{ options: T; args: string[] }>>['values'] {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  try {
    return parseArgs({ options, args: [...argv] }).values;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${message.split('\n')[0]}\n${usage}\n`);
    process.exit(2);
  }
}
