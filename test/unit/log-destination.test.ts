import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_DELAY_MS } from '../../http/log-destination.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Runs `body` in a fresh Node process with `log`, a pino logger over stdoutLogDestination writing
 * to a file; returns the file's lines and what the process printed on stderr.
 */
function runWithLog(body: string, shared = false): { lines: string[]; stderr: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'log-destination-'));
  const file = path.join(dir, 'out.log');
  const script = `
    import fs, { openSync, readFileSync } from 'node:fs';
    // Every write's size, as sonic-boom hands it to the system.
    const writes = [];
    const writeSync = fs.writeSync;
    fs.writeSync = (fd, data, ...rest) => {
      writes.push(Buffer.byteLength(data));
      return writeSync(fd, data, ...rest);
    };
    import { pino } from 'pino';
    import { stdoutLogDestination } from ${JSON.stringify(path.join(ROOT, 'http', 'log-destination.ts'))};
    const fd = openSync(${JSON.stringify(file)}, 'w');
    const log = pino({ base: null, timestamp: false }, stdoutLogDestination(fd, ${shared}));
    const written = () => readFileSync(${JSON.stringify(file)}, 'utf8');
    ${body}
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
  rmSync(dir, { recursive: true, force: true });
  return { lines: lines.map((l) => JSON.parse(l).msg), stderr: run.stderr };
}

describe('stdoutLogDestination', () => {
  it('writes lines together once the first has waited MAX_LINE_DELAY_MS, in order', () => {
    const { lines, stderr } = runWithLog(`
      log.info('one');
      setImmediate(() => log.info('two'));
      process.stderr.write('at first: ' + JSON.stringify(written()) + '\\n');
      setTimeout(() => process.stderr.write('later: ' + written().split('\\n').filter(Boolean).length + ' lines\\n'), ${MAX_LINE_DELAY_MS} + 30);
    `);
    expect(stderr).toContain('at first: ""');
    expect(stderr).toContain('later: 2 lines');
    expect(lines).toEqual(['one', 'two']);
  });

  it('keeps characters outside ASCII intact across a turn of lines', () => {
    const { lines } = runWithLog(`
      for (let i = 0; i < 100; i++) log.info('Zoë ✓ 日本 😀 ' + i);
    `);
    expect(lines).toHaveLength(100);
    expect(lines[0]).toBe('Zoë ✓ 日本 😀 0');
    expect(lines[99]).toBe('Zoë ✓ 日本 😀 99');
  });

  it('writes what is waiting when the process exits within the turn', () => {
    const { lines } = runWithLog(`log.info('first'); log.warn('last words'); process.exit(3);`);
    expect(lines).toEqual(['first', 'last words']);
  });

  it('writes at once when a turn logs more than the buffer holds', () => {
    const { lines, stderr } = runWithLog(`
      for (let i = 0; i < 2000; i++) log.info('line ' + i + ' ' + 'x'.repeat(100));
      process.stderr.write('written during the turn: ' + (written().length >= 16 * 1024) + '\\n');
    `);
    expect(stderr).toContain('written during the turn: true');
    expect(lines).toHaveLength(2000);
    expect(lines[1999]).toMatch(/^line 1999 /);
  });

  it('cuts writes at line ends to what a pipe takes whole when other processes share stdout', () => {
    const { lines, stderr } = runWithLog(
      `
      for (let i = 0; i < 2000; i++) log.info('line ' + i + ' ' + 'x'.repeat(100));
      log.info('long ' + 'y'.repeat(5000));
      log.info('after');
      process.on('exit', () => process.stderr.write('writes: ' + JSON.stringify(writes) + '\\n'));
    `,
      true,
    );
    expect(lines).toHaveLength(2002);
    expect(lines[1999]).toMatch(/^line 1999 /);
    expect(lines[2001]).toBe('after');
    const writes = JSON.parse(/writes: (.*)/.exec(stderr)?.[1] ?? '[]') as number[];
    expect(writes.length).toBeGreaterThan(50);
    // Only the one line longer than PIPE_BUF is written longer, whole.
    expect(writes.filter((n) => n > 4096)).toHaveLength(1);
  });
});
