import { RE2JS } from "re2js";

/**
 * Limits of tenant-supplied regular expressions (decision 0025). RE2 matches in time linear in
 * the text, but the factor is the size of the compiled program: re2js spends up to about 70 ns
 * per character per instruction, and `(?:a?){1000}a{1000}$` compiles to 3,003 instructions. So
 * a pattern is paid for by program size × text length, and both factors are capped.
 */
export const REGEX_LIMITS = {
  /** Instructions of a compiled pattern; repetition counts expand into it (`a{500}` is 502). */
  programSize: 1_000,
  /** Characters of a text `matches()` accepts. */
  matchTextLength: 65_536,
  /** Program size × text length summed over an input schema's patterns, for one payload. */
  schemaWork: 1_000_000,
} as const;

/** Compiles a pattern with RE2, refusing one whose program passes the size limit. */
export function compilePattern(pattern: string): RE2JS {
  const re = RE2JS.compile(pattern);
  const size = re.programSize();
  if (size > REGEX_LIMITS.programSize) {
    throw new Error(
      `the pattern compiles to ${size} RE2 instructions; the limit is ${REGEX_LIMITS.programSize} ` +
        "(repetition counts such as {1000} expand into the program)",
    );
  }
  return re;
}

/** What matching a text costs: the compiled program's size × the text's length. */
export function matchWork(re: RE2JS, text: string): number {
  return re.programSize() * text.length;
}
