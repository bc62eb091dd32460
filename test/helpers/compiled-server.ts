import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global setup: `npm run build`, so that the tests that start the server as the README does
 * (`npm start`, SpawnOptions.npmStart) run the code under test, not a dist/ built before the last
 * change.
 */
export default function setup(): void {
  const build = fileURLToPath(new URL('../../scripts/build.mjs', import.meta.url));
  try {
    execFileSync(process.execPath, [build], { stdio: 'pipe', encoding: 'utf8' });
  } catch (err) {
    // tsc writes its errors to stdout.
    const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
    throw new Error(`npm run build failed:\n${stdout}${stderr}`);
  }
}
