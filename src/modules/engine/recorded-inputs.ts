import type { ExpressionVariables } from "../workflows/index.js";

/**
 * The customer attributes one node evaluation read, noted as its expressions read them: the keys
 * it found, with their values, and the keys it asked for and did not find. Recorded with the
 * step (`attributes` and `attributesAbsent` in its trace entry), so that a backtest gives the
 * node what it read then (contract section 8). Only what was read is kept: a few bytes per step.
 */
export class AttributeReads {
  readonly #found = new Map<string, unknown>();
  readonly #absent = new Set<string>();

  /**
   * The variables with their attributes seen through a view that notes every key read. CEL reads
   * a map's field as an own-property check then a get, and a whole map by its own keys: the
   * view notes the first and the last (a get alone, of `constructor` say, is not a read).
   */
  watch(vars: ExpressionVariables): ExpressionVariables {
    const target = vars.customer.attributes;
    const note = (key: string | symbol): void => {
      if (typeof key !== "string") return;
      if (Object.hasOwn(target, key)) this.#found.set(key, target[key]);
      else this.#absent.add(key);
    };
    const view = new Proxy(target, {
      getOwnPropertyDescriptor(t, key) {
        note(key);
        return Reflect.getOwnPropertyDescriptor(t, key);
      },
      ownKeys(t) {
        const keys = Reflect.ownKeys(t);
        for (const key of keys) note(key);
        return keys;
      },
    });
    return Object.assign(vars, { customer: { ...vars.customer, attributes: view } });
  }

  /** Every key read, found or not. */
  keys(): string[] {
    return [...this.#found.keys(), ...this.#absent];
  }

  /** The facts recorded with the step; none when the node read no attribute. */
  facts(): { attributes?: Record<string, unknown>; attributesAbsent?: string[] } {
    const facts: { attributes?: Record<string, unknown>; attributesAbsent?: string[] } = {};
    if (this.#found.size > 0) {
      const attributes: Record<string, unknown> = {};
      for (const [key, value] of this.#found) {
        Object.defineProperty(attributes, key, {
          value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      facts.attributes = attributes;
    }
    if (this.#absent.size > 0) facts.attributesAbsent = [...this.#absent];
    return facts;
  }
}
