/**
 * `make(key)`, made the first time a key asks and kept as long as the key lives (a WeakMap): a
 * batcher per database, a compiled validator per schema.
 */
export function oncePer<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) {
      value = make(key);
      made.set(key, value);
    }
    return value;
  };
}
