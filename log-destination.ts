import { pino } from 'pino';

/** Past this many bytes waiting, lines are written at once rather than at the end of the turn. */
const MAX_PENDING_BYTES = 8 * 1024; // sonic-boom writes at most 16 KiB at a time

/**
 * Where the server's log lines go: stdout, with the lines logged during one turn of the event loop
 * written together, synchronously, as the turn ends. Pino's default hands every line to libuv's
 * thread pool (a thread wake-up and two more system calls per line); a synchronous write per line
 * still costs a system call per request. Under load a turn finishes several requests, so their
 * lines share one write. A line waits at most for the rest of its turn, and whatever waits is
 * written when the process exits.
 */
export function stdoutLogDestination(fd = 1): pino.DestinationStream {
  const stream = pino.destination({ dest: fd, sync: true, minLength: MAX_PENDING_BYTES });
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    stream.flush();
  };
  process.on('exit', () => {
    if (scheduled) stream.flush();
  });
  return {
    write(line: string) {
      stream.write(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
  };
}
