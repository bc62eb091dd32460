/**
 * End users under rules (issue 45): an owner-rule read of one document by a user with the
 * workplace's access token, against the same read by the administrator with the owner filter
 * written out. The rule is ANDed into the same statement and served by the owner index, so the
 * end user's read may cost at most OWNER_RULE_TARGET times the administrator's.
 */
import { type Bench, call, docsUrl, jsonHeaders } from '../context.js';
import { fill } from '../data.js';
import { compare, load } from '../measure.js';
import { signIn } from './oidc.js';

export const OWNER_RULE =
  'owner-rule read of one document (its baseline: the admin, owner filter written out)';
const OWNER_RULE_TARGET = 1.15;
const NOTES = 'notes';

export async function runOwnerRuleRead(bench: Bench): Promise<void> {
  const workplace = bench.workplace;
  // The size, whatever --docs says: the rule's cost is per request, not per document.
  const count = 100_000;
  const started = Date.now();
  // The signed-in user (u-ada) owns one document among `count`; the others have owners of their own.
  await fill(bench, NOTES, count, (i) => ({
    owner: i === 4242 ? 'u-ada' : `user${i}`,
    title: `note ${i}`,
    n: i,
  }));
  await call(bench, 'POST', `/v1/workplaces/${workplace}/storages/${NOTES}/indexes`, {
    name: 'byOwner',
    key: ['owner'],
  });
  const own = { $expr: { $eq: ['$owner', '$$AUTH.sub'] } };
  await call(bench, 'PUT', `/v1/workplaces/${workplace}/storages/${NOTES}/rules`, { read: own });
  process.stderr.write(
    `seeded ${NOTES}: ${count} documents in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  const issuer = `${bench.api.url}/oidc/${workplace}`;
  const { tokens } = await signIn(bench, issuer);
  const url = docsUrl(bench, NOTES, 'read');
  // What each answers must be the one document, or the comparison means nothing.
  const check = async (headers: Record<string, string>, body: string) => {
    const res = await fetch(url, { method: 'POST', headers, body });
    const answer = (await res.json()) as { result?: { owner: string }[] };
    if (answer.result?.length !== 1 || answer.result[0]?.owner !== 'u-ada')
      throw new Error(
        `${OWNER_RULE}: expected u-ada's one document, got ${JSON.stringify(answer).slice(0, 200)}`,
      );
  };
  const userHeaders = { 'content-type': 'application/json', authorization: `Bearer ${tokens.access_token}` };
  const userBody = JSON.stringify({ query: {} });
  const adminBody = JSON.stringify({ query: { owner: 'u-ada' } });
  await check(userHeaders, userBody);
  await check(jsonHeaders(bench), adminBody);
  // The administrator's read is the "baseline" of this row: the ratio is the end user's rate over it.
  const row = await compare(
    bench,
    OWNER_RULE,
    (warmUp) => load(bench, url, () => userBody, { headers: userHeaders, warmUp }),
    (warmUp) => load(bench, url, () => adminBody, { warmUp }),
  );
  bench.results.rows.push(row);
  const cost = 1 / (row.ratio as number);
  bench.results.targets.push([
    `owner-rule read of one document: <= ${OWNER_RULE_TARGET} x the administrator's read with the owner filter`,
    cost <= OWNER_RULE_TARGET,
    `${cost.toFixed(2)} x (rates ${(row.pairRatios ?? []).map((r) => r.toFixed(2)).join(', ')})`,
  ]);
}
