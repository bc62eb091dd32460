import { pino } from 'pino';

/** Past this many characters waiting, lines are written at once rather than at the end of the turn. */
const MAX_PENDING_CHARS = 8 * 1024;

/**
 * Where the server's log lines go: stdout, with the lines logged during one turn of the event loop
 * written together, synchronously, as the turn ends. Pino's default hands every line to libuv's
 * thread pool (a thread wake-up and two more system calls per line); a synchronous write per line
 * still costs a system call per request. Under load a turn finishes several requests, so their
 * lines share one write. A line waits at most for the rest of its turn, and whatever waits is
 * written when the process exits.
 *
 * The lines are gathered here and handed to sonic-boom (which retries partial writes and EAGAIN)
 * as one buffer, encoded once. Gathering them in sonic-boom instead (`minLength`) measures the
 * UTF-8 length of everything waiting on every line and encodes each write twice: in a callgrind
 * count of in-process reads, UTF-8 work was among the largest differences from the baseline.
 */
export function stdoutLogDestination(fd = 1): pino.DestinationStream {
  const stream = pino.destination({ dest: fd, sync: true, contentMode: 'buffer' });
  let pending: string[] = [];
  let pendingChars = 0;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
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
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
  };
}
