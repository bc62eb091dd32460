// npm run build (and `prepare`, so that `npm install` leaves a runnable server): the production
// code compiled by tsc into dist/, with the files the server reads at run time beside it, at the
// same places relative to the modules that read them. Plain JavaScript, so that it runs before
// anything else is built and without a TypeScript loader.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const started = performance.now();
rmSync(`${root}dist`, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', `${root}tsconfig.build.json`], { stdio: 'inherit' });
for (const file of ['openapi.yaml', 'generated/openapi-3.0.json', 'db/migrations'])
  cpSync(`${root}${file}`, `${root}dist/${file}`, { recursive: true });
console.log(`built dist/ in ${Math.round(performance.now() - started)} ms`);
