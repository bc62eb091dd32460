/**
 * Numbers by their decimal form (the shortest that reads back as the double, which is what JSONB
 * holds of a stored or computed number), computed exactly, as PostgreSQL's numeric computes them:
 * the expression operators that work on decimal digits ($round, $trunc, $mod, number-to-string)
 * give the same result in SQL and in TypeScript.
 */
interface Decimal {
  /** The value is digits × 10^exponent. */
  digits: bigint;
  exponent: number;
}

function toDecimal(n: number): Decimal {
  const [mantissa, e = '0'] = String(n).split('e');
  const [whole, fraction = ''] = (mantissa as string).split('.');
  return { digits: BigInt(`${whole}${fraction}`), exponent: Number(e) - fraction.length };
}

function toNumber(d: Decimal): number {
  return Number(`${d.digits}e${d.exponent}`);
}

function scaled(d: Decimal, exponent: number): bigint {
  return d.digits * 10n ** BigInt(d.exponent - exponent);
}

/** PostgreSQL's numeric text of a double: plain digits, never an exponent. */
export function decimalText(n: number): string {
  const { digits, exponent } = toDecimal(n);
  const negative = digits < 0n;
  const abs = (negative ? -digits : digits).toString();
  let text: string;
  if (exponent >= 0) text = abs + '0'.repeat(exponent);
  else {
    const padded = abs.padStart(-exponent + 1, '0');
    text = `${padded.slice(0, exponent)}.${padded.slice(exponent)}`;
  }
  return negative && text !== '0' ? `-${text}` : text;
}

/** `n` to `place` decimal places: half to even (`$round`) or toward zero (`$trunc`). */
export function roundDecimal(n: number, place: number, mode: 'even' | 'trunc'): number {
  const d = toDecimal(n);
  if (d.exponent >= -place) return n;
  const unit = 10n ** BigInt(-place - d.exponent);
  let q = d.digits / unit;
  const rest = d.digits % unit;
  if (mode === 'even') {
    const twice = 2n * (rest < 0n ? -rest : rest);
    const sign = d.digits < 0n ? -1n : 1n;
    if (twice > unit || (twice === unit && q % 2n !== 0n)) q += sign;
  }
  return toNumber({ digits: q, exponent: -place });
}

/** The remainder of a by b (b not 0), with a's sign, as numeric's `%`. */
export function modDecimal(a: number, b: number): number {
  const x = toDecimal(a);
  const y = toDecimal(b);
  const e = Math.min(x.exponent, y.exponent);
  return toNumber({ digits: scaled(x, e) % scaled(y, e), exponent: e });
}
