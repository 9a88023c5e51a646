// Sums of amounts exactly as PostgreSQL's `sum(amount::numeric)` gives them, kept as a window
// slides: each amount added and taken out again, which a sum of doubles cannot do exactly
// (decision 0021, "Sums kept as their windows slide").

/** Significant digits PostgreSQL keeps of a `double precision` cast to `numeric` (`DBL_DIG`). */
const DIGITS = 15;
const LIMIT = 10n ** BigInt(DIGITS);

const powers: bigint[] = [];
function tenTo(n: number): bigint {
  if (n < 64) {
    for (let i = powers.length; i <= n; i++) powers.push(i === 0 ? 1n : (powers[i - 1] as bigint) * 10n);
    return powers[n] as bigint;
  }
  return 10n ** BigInt(n);
}

const view = new DataView(new ArrayBuffer(8));

/**
 * An amount as `numeric` holds it after `amount::numeric`: `units × 10^-scale`. PostgreSQL prints
 * the double with `%.15g` and reads that back, so the double's exact binary value is rounded to
 * 15 significant digits, halves to even (JavaScript's `toPrecision` rounds halves up).
 */
export function asNumeric(x: number): { units: bigint; scale: number } {
  if (x === 0 || !Number.isFinite(x)) return { units: 0n, scale: 0 };
  // A double whose shortest text has at most 15 significant digits (an amount in cents) is that
  // text: the exact value lies within half a unit of the double's last place of it, nearer than
  // any other 15-digit decimal.
  const short = SHORT.exec(String(x));
  if (short) {
    const [, sign, whole, fraction = "", exponent = "0"] = short;
    const digits = `${whole}${fraction}`.replace(/^0+/, "");
    if (digits.length <= DIGITS) {
      const scale = fraction.length - Number(exponent);
      const units = BigInt(digits) * (scale < 0 ? tenTo(-scale) : 1n);
      return trimmed(sign === "-" ? -units : units, Math.max(scale, 0));
    }
  }
  view.setFloat64(0, Math.abs(x));
  const hi = view.getUint32(0);
  const biased = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let exponent = -1074;
  if (biased !== 0) {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  // The exact value, `digits × 10^-scale`: m × 2^e is m × 5^-e × 10^e for e < 0.
  let digits = exponent >= 0 ? mantissa << BigInt(exponent) : mantissa * 5n ** BigInt(-exponent);
  let scale = exponent >= 0 ? 0 : -exponent;
  if (digits >= LIMIT) {
    const drop = digits.toString().length - DIGITS;
    const unit = tenTo(drop);
    let kept = digits / unit;
    const rest = digits % unit;
    const half = unit / 2n;
    if (rest > half || (rest === half && (kept & 1n) === 1n)) kept += 1n;
    digits = kept;
    scale -= drop;
  }
  // A large integer rounded: its dropped digits are zeros again.
  if (scale < 0) {
    digits *= tenTo(-scale);
    scale = 0;
  }
  return trimmed(x < 0 ? -digits : digits, scale);
}

/** A double's text: sign, whole digits, fraction digits, exponent. */
const SHORT = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

/** Without trailing zeros after the point, which carry nothing and would widen the sums' scale. */
function trimmed(units: bigint, scale: number): { units: bigint; scale: number } {
  let u = units;
  let s = scale;
  while (s > 0 && u % 10n === 0n) {
    u /= 10n;
    s--;
  }
  return { units: u, scale: s };
}

/** A count of amounts and their exact sum, `units × 10^-scale`, which amounts enter and leave. */
export class AmountTotal {
  n = 0;
  units = 0n;
  scale = 0;

  /** Adds (`sign` 1) or takes out (-1) one amount. */
  add(amount: { units: bigint; scale: number }, sign: 1 | -1): void {
    if (amount.scale > this.scale) {
      this.units *= tenTo(amount.scale - this.scale);
      this.scale = amount.scale;
    }
    const units = amount.units * tenTo(this.scale - amount.scale);
    this.units += sign === 1 ? units : -units;
    this.n += sign;
  }

  copy(): AmountTotal {
    const copy = new AmountTotal();
    copy.n = this.n;
    copy.units = this.units;
    copy.scale = this.scale;
    return copy;
  }

  /** The sum as a double, as PostgreSQL's `numeric` text read by `Number` gives it. */
  sum(): number {
    return asNumber(this.units, this.scale);
  }
}

/** `units × 10^-scale` as a double: its decimal text read by `Number`, as the statement's value is. */
function asNumber(units: bigint, scale: number): number {
  if (scale === 0) return Number(units);
  const negative = units < 0n;
  const text = (negative ? -units : units).toString().padStart(scale + 1, "0");
  const point = text.length - scale;
  return Number(`${negative ? "-" : ""}${text.slice(0, point)}.${text.slice(point)}`);
}

/** A double as the statement gives it after a cast to `numeric`: 15 significant digits. */
export function throughNumeric(x: number): number {
  const { units, scale } = asNumeric(x);
  return asNumber(units, scale);
}
