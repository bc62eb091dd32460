import { pino } from 'pino';

/** Past this many characters waiting, lines are written at once. */
const MAX_PENDING_CHARS = 16 * 1024;
/** The longest a line waits before it is written. */
export const MAX_LINE_DELAY_MS = 20;

/**
 * Where the server's log lines go: stdout, with the lines logged within MAX_LINE_DELAY_MS (or until
 * MAX_PENDING_CHARS wait) written together, synchronously. Pino's default hands every line to
 * libuv's thread pool (a thread wake-up and two more system calls per line); a synchronous write
 * per line, or per turn of the event loop, still costs a system call for every request or two
 * under load, a measurable share of a small request's cost. Gathered this way, one write serves
 * many requests. Whatever waits is written when the process exits.
 *
 * The lines are gathered here and handed to sonic-boom (which retries partial writes and EAGAIN)
 * as one buffer, encoded once. Gathering them in sonic-boom instead (`minLength`) measures the
 * UTF-8 length of everything waiting on every line and encodes each write twice, UTF-8 work that
 * profiles of in-process reads showed plainly (docs/performance.md).
 */
export function stdoutLogDestination(fd = 1): pino.DestinationStream {
  const stream = pino.destination({ dest: fd, sync: true, contentMode: 'buffer' });
  let pending: string[] = [];
  let pendingChars = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    pendingChars = 0;
    stream.write(Buffer.from(text) as unknown as string);
  };
  process.on('exit', flush);
  return {
    write(line: string) {
      pending.push(line);
      pendingChars += line.length;
      if (pendingChars >= MAX_PENDING_CHARS) flush();
      // Unreferenced: waiting lines never keep the process alive; they are written as it exits.
      else if (timer === undefined) timer = setTimeout(flush, MAX_LINE_DELAY_MS).unref();
    },
  };
}
