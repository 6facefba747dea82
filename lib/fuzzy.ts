/**
 * A fuzzy string set as PostgREST uses it for its "Perhaps you meant …" hints (Haskell `fuzzyset` 0.2): n-gram
 * vectors (trigrams first, then bigrams) ranked by cosine similarity, the best 50 ranked again by normalized
 * Levenshtein similarity. Same algorithm, so the same suggestion for the same names.
 */
export class FuzzySet {
  /** Lowercased entry → the entry as given. */
  private readonly exact = new Map<string, string>();
  /** Per gram size: the entries' gram vectors and magnitudes. */
  private readonly items = new Map<number, { key: string; grams: Map<string, number>; norm: number }[]>();

  constructor(values: Iterable<string>, private readonly lower = 2, private readonly upper = 3) {
    for (const value of values) {
      const key = value.toLowerCase();
      if (this.exact.has(key)) continue;
      this.exact.set(key, value);
      for (let size = lower; size <= upper; size++) {
        const grams = gramVector(key, size);
        const list = this.items.get(size) ?? [];
        list.push({ key, grams, norm: magnitude(grams) });
        this.items.set(size, list);
      }
    }
  }

  /** The matches of `value` scoring at least `minScore`, best first. */
  get(value: string, minScore = 0.33): [number, string][] {
    const key = value.toLowerCase();
    const exact = this.exact.get(key);
    if (exact !== undefined) return [[1, exact]];
    for (let size = this.upper; size >= this.lower; size--) {
      const found = this.matches(key, size, minScore);
      if (found.length > 0) return found;
    }
    return [];
  }

  /** The best match scoring at least `minScore`, if any. */
  getOne(value: string, minScore = 0.33): string | undefined {
    return this.get(value, minScore)[0]?.[1];
  }

  private matches(key: string, size: number, minScore: number): [number, string][] {
    const query = gramVector(key, size);
    const queryNorm = magnitude(query);
    const cosine: [number, string][] = [];
    for (const item of this.items.get(size) ?? []) {
      let dot = 0;
      for (const [gram, n] of query) dot += n * (item.grams.get(gram) ?? 0);
      if (dot > 0) cosine.push([dot / (queryNorm * item.norm), item.key]);
    }
    cosine.sort((a, b) => b[0] - a[0]);
    return cosine.slice(0, 50)
      .map(([, entry]): [number, string] => [levenshteinSimilarity(key, entry), entry])
      .sort((a, b) => b[0] - a[0])
      .filter(([score]) => score >= minScore)
      .map(([score, entry]) => [score, this.exact.get(entry) ?? ""]);
  }
}

/** Letters, digits, spaces and commas, lowercased (`fuzzyset`'s normalization). */
function normalized(value: string): string {
  return [...value.toLowerCase()].filter((c) => /[\p{L}\p{N}\s,]/u.test(c)).join("");
}

function gramVector(value: string, size: number): Map<string, number> {
  const chars = [..."-" + normalized(value) + "-"];
  const out = new Map<string, number>();
  for (let i = 0; i + size <= chars.length; i++) {
    const gram = chars.slice(i, i + size).join("");
    out.set(gram, (out.get(gram) ?? 0) + 1);
  }
  return out;
}

function magnitude(vector: Map<string, number>): number {
  let sum = 0;
  for (const n of vector.values()) sum += n * n;
  return Math.sqrt(sum);
}

/** 1 − Levenshtein distance / the longer length (1 for two empty strings). */
export function levenshteinSimilarity(a: string, b: string): number {
  const s = [...a], t = [...b];
  const longest = Math.max(s.length, t.length);
  if (longest === 0) return 1;
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      row[j] = Math.min(row[j - 1]! + 1, prev[j]! + 1, prev[j - 1]! + (s[i - 1] === t[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return 1 - prev[t.length]! / longest;
}
