/**
 * `npm run check:imports` (part of `npm run lint`): the modules' layer order and no import cycles.
 * A module may import its own layer and the layers below it; an import cycle anywhere, type-only
 * ones included, is an error. The layers are the floor plan CONTRIBUTING.md describes.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Lowest first. A file belongs to the layer of the longest prefix that names it. */
const LAYERS: readonly (readonly string[])[] = [
  ['generated/', 'errors.ts', 'secrets.ts', 'metrics.ts'],
  ['mongo/value/'],
  ['mongo/'],
  ['db/connection/'],
  ['db/platform/'],
  ['db/storage/'],
  ['oidc/'],
  ['handlers/'],
  ['http/'],
  ['config.ts', 'app.ts', 'server.ts', 'sdk/', 'scripts/', 'test/', 'vitest.'],
];

function layerOf(file: string): number {
  let best = -1;
  let length = 0;
  LAYERS.forEach((prefixes, i) => {
    for (const p of prefixes)
      if (file.startsWith(p) && p.length > length) {
        best = i;
        length = p.length;
      }
  });
  if (best < 0)
    throw new Error(`${file} is in no layer: add its folder to LAYERS in scripts/check-imports.ts`);
  return best;
}

/** The repository's own modules that `file` imports (relative specifiers; `.js` names the `.ts`). */
function importsOf(file: string, files: ReadonlySet<string>): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out: string[] = [];
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = path.normalize(path.join(path.dirname(file), fileName)).replace(/\.js$/, '.ts');
    if (files.has(target)) out.push(target);
  }
  return out;
}

/** Strongly connected components of more than one module, or of one that imports itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = new Set(
  execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f !== '' && !f.endsWith('.d.ts')),
);
const graph = new Map([...files].map((f) => [f, importsOf(f, files)]));
const problems: string[] = [];
for (const [file, targets] of graph)
  for (const target of targets)
    if (layerOf(target) > layerOf(file))
      problems.push(`${file} imports ${target}, a layer above it (scripts/check-imports.ts, LAYERS)`);
for (const component of cycles(graph)) problems.push(`import cycle: ${component.join(' ↔ ')}`);
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`imports: ${files.size} modules, ${LAYERS.length} layers, no cycle, no upward import`);
