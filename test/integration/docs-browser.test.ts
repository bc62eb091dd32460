import { describe, expect, it } from 'vitest';
import { loadSpec } from '../../http/spec.js';
import { chromiumAvailable, withBrowserAndServer } from '../helpers/chromium.js';

type Node = Record<string, unknown>;
const spec = loadSpec() as unknown as Node;

function resolve(n: Node): Node {
  if (typeof n.$ref !== 'string') return n;
  let at: unknown = spec;
  for (const seg of n.$ref.replace(/^#\//, '').split('/')) at = (at as Node)[seg];
  return at as Node;
}

/** The named examples of each response with a body: `GET /path 200` -> [[name, value], ...]. */
function documentedExamples(): Map<string, [string, unknown][]> {
  const out = new Map<string, [string, unknown][]>();
  for (const [path, item] of Object.entries(spec.paths as Node)) {
    for (const [method, op] of Object.entries(item as Node)) {
      const responses = (op as Node).responses as Node | undefined;
      if (!responses) continue;
      for (const [status, r] of Object.entries(responses)) {
        const media = Object.values((resolve(r as Node).content as Node | undefined) ?? {})[0] as
          | Node
          | undefined;
        if (!media) continue;
        const examples = Object.entries((media.examples as Node | undefined) ?? {}).map(
          ([name, ex]) => [name, resolve(ex as Node).value] as [string, unknown],
        );
        out.set(`${method.toUpperCase()} ${path} ${status}`, examples);
      }
    }
  }
  return out;
}

interface ShownResponse {
  key: string;
  options: string[];
  example: string | null;
}

const live = withBrowserAndServer();

describe.skipIf(!chromiumAvailable)('Swagger UI at /docs', () => {
  it('shows the contract examples for every response with a body, and nothing invented', async () => {
    const page = await live.browser.newPage();
    await page.goto(`${live.server.base}/docs`);
    await page.waitForSelector('.opblock-summary-control');
    const blocks = await page.locator('.opblock').all();
    const shown: ShownResponse[] = [];
    let invented = 0;
    // One operation open at a time: rendering all of them at once is slow on a small machine.
    for (const block of blocks) {
      await block.locator('.opblock-summary-control').click();
      await block.locator('.responses-table').waitFor();
      invented += (await block.innerText()).split('additionalProp1').length - 1;
      shown.push(
        ...(await block.evaluate((op) => {
          const method = op.querySelector('.opblock-summary-method')?.textContent ?? '';
          const path = op.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
          return [...op.querySelectorAll('tr.response')].map((row) => ({
            key: `${method} ${path} ${row.getAttribute('data-code')}`,
            options: [...row.querySelectorAll('.examples-select-element option')].map(
              (o) => o.getAttribute('value') ?? '',
            ),
            example: row.querySelector('pre.example')?.textContent ?? null,
          }));
        })),
      );
      await block.locator('.opblock-summary-control').click();
    }
    await page.close();

    const documented = documentedExamples();
    expect(documented.size).toBeGreaterThan(200);
    const seen = new Set<string>();
    for (const row of shown) {
      const examples = documented.get(row.key);
      if (!examples) continue; // no body: Swagger UI shows no example either
      seen.add(row.key);
      expect(row.options, row.key).toEqual(
        examples.length > 1 ? examples.map(([name]) => name) : row.options,
      );
      expect(row.example, row.key).not.toBeNull();
      expect(JSON.parse(row.example as string), row.key).toEqual(examples[0]?.[1]);
    }
    expect([...documented.keys()].filter((k) => !seen.has(k))).toEqual([]);
    expect(invented).toBe(0);
  }, 120_000);
});
