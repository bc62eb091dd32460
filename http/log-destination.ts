import { pino } from 'pino';

/** Past this many characters waiting, lines are written at once. */
const MAX_PENDING_CHARS = 16 * 1024;
/**
 * Linux writes at most this many bytes to a pipe in one piece (PIPE_BUF): a longer write from one
 * process may be split around another process's write, in the middle of a line.
 */
const ATOMIC_PIPE_WRITE = 4096;
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
 *
 * `shared`: other processes write to the same stdout (node:cluster workers), so each write is cut
 * at line ends to at most ATOMIC_PIPE_WRITE bytes, and lines never interleave (a single longer line
 * still goes in one write).
 */
export function stdoutLogDestination(fd = 1, shared = false): pino.DestinationStream {
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
    const bytes = Buffer.from(text);
    if (!shared || bytes.length <= ATOMIC_PIPE_WRITE) {
      stream.write(bytes as unknown as string);
      return;
    }
    for (let start = 0; start < bytes.length; ) {
      // The last line end within the limit, or the first one after it for a line that long.
      let end = bytes.lastIndexOf(10, start + ATOMIC_PIPE_WRITE - 1) + 1;
      if (end <= start) end = bytes.indexOf(10, start) + 1 || bytes.length;
      stream.write(bytes.subarray(start, end) as unknown as string);
      start = end;
    }
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
