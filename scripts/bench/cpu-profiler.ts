/**
 * Preloaded into both servers by `npm run bench -- --cpu-prof DIR` (after tsx): V8's sampling
 * profiler, started and stopped by the bench over the IPC channel, so that a profile holds one
 * scenario's measured runs and nothing else. Node's own `--cpu-prof` profiles the whole process,
 * seeding and warm-up included, which buries a cheap scenario's few microseconds a request.
 *
 * Messages: {profile: 'start'} and {profile: 'stop', file}; each is answered with {profiled: ...}
 * once done, so the bench never measures while the profiler is still starting or writing.
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

/** Sampling interval in µs: 4 times V8's default, enough samples for a 5 s run of cheap requests. */
const INTERVAL_US = 250;

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: INTERVAL_US });

type Message = { profile: 'start' } | { profile: 'stop'; file: string };

process.on('message', async (m: Message) => {
  if (m.profile === 'start') {
    await session.post('Profiler.start');
    process.send?.({ profiled: 'started' });
  } else if (m.profile === 'stop') {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(m.file, JSON.stringify(profile));
    process.send?.({ profiled: m.file });
  }
});
// The channel must not keep a server alive that was asked to stop.
process.channel?.unref();
