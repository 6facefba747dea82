import { normalize } from "./vectors.ts";
import { fnv1a } from "../../lib/fnv.ts";

/** The model name recorded for vectors made by {@linkcode embedLocally}. */
export const LOCAL_EMBEDDING_MODEL = "local-lexical-v1";

/** Dimensions of the local embedder's vectors. */
export const LOCAL_DIMENSIONS = 256;

// Frequent words count a little, so that "what is X" and "X" stay close but the content words decide.
const LIGHT = new Set(
  ("a an the of to in on at for and or is are was were be been it this that these those what which who whom " +
    "how do does did i you we they he she me my your our their with by from as about please can could would " +
    "should will tell give")
    .split(" "),
);

function add(vector: Float32Array, feature: string, weight: number): void {
  const h = fnv1a(feature, 0);
  const sign = fnv1a(feature, 0x9e3779b9) & 1 ? 1 : -1;
  vector[h % vector.length]! += sign * weight;
}

/** The words of a text: lowercase runs of letters and digits. */
export function words(text: string): string[] {
  return text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * Embeds a text without any model server: a deterministic, purely lexical vector (signed feature hashing of
 * words and of their character trigrams, unit length). It knows no synonyms: texts are close when they share
 * words, which is enough for offline RAG and search and keeps the semantic cache strict. Negations such as
 * "not" count as full words, so "is it safe" and "is it not safe" stay apart.
 */
export function embedLocally(text: string): Float32Array {
  const vector = new Float32Array(LOCAL_DIMENSIONS);
  for (const word of words(text)) {
    add(vector, `w:${word}`, LIGHT.has(word) ? 0.25 : 1);
    if (word.length > 3 && !LIGHT.has(word)) {
      const padded = `^${word}$`;
      for (let i = 0; i + 3 <= padded.length; i++) add(vector, `t:${padded.slice(i, i + 3)}`, 0.15);
    }
  }
  return normalize(vector);
}

/** A rough token count for texts embedded locally (words), reported as usage. */
export function countTokens(text: string): number {
  return words(text).length;
}
