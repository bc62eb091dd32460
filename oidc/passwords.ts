import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashes in the PHC string format with scrypt (RFC 7914):
 * `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (base64 without padding; 16-byte salt, 32-byte hash).
 * Verification reads the parameters from the string, so they can be raised later without
 * invalidating stored hashes.
 */

const DEFAULTS = { ln: 15, r: 8, p: 1 };
const KEY_LENGTH = 32;
const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,})\$([A-Za-z0-9+/]{32,})$/;

function derive(
  password: string,
  salt: Buffer,
  ln: number,
  r: number,
  p: number,
  length: number,
): Promise<Buffer> {
  const N = 2 ** ln;
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, length, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const { ln, r, p } = DEFAULTS;
  const hash = await derive(password, salt, ln, r, p, KEY_LENGTH);
  return `$scrypt$ln=${ln},r=${r},p=${p}$${b64(salt)}$${b64(hash)}`;
}

/** Spent on unknown users and malformed hashes, so that every failure costs the same. */
let decoy: Promise<string> | undefined;

/** Whether `password` matches `stored`; false for anything that is not a hash this module wrote. */
export async function verifyPassword(password: string, stored: unknown): Promise<boolean> {
  const m = typeof stored === 'string' ? PHC.exec(stored) : null;
  if (!m) {
    decoy ??= hashPassword(randomBytes(16).toString('hex'));
    await verifyPassword(password, await decoy);
    return false;
  }
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (ln < 10 || ln > 20 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const expected = Buffer.from(m[5] as string, 'base64');
  const actual = await derive(password, Buffer.from(m[4] as string, 'base64'), ln, r, p, expected.length);
  return timingSafeEqual(actual, expected);
}
