/** Options of {@linkcode chunkText}. */
export interface ChunkOptions {
  /** Characters per chunk at most (default 800). */
  size: number;
  /** Characters shared by two neighbouring chunks (default 150), less than `size`. */
  overlap: number;
}

/** Default chunking of RAG ingestion. */
export const DEFAULT_CHUNKING: ChunkOptions = { size: 800, overlap: 150 };

/**
 * Splits a text into chunks of at most `size` characters that overlap by about `overlap` characters, cutting
 * at whitespace where one lies in the second half of the window, so that a sentence split at one boundary is
 * whole in one of the two chunks around it. Blank input gives no chunk.
 */
export function chunkText(text: string, options: ChunkOptions = DEFAULT_CHUNKING): string[] {
  const { size, overlap } = options;
  if (size < 1 || overlap < 0 || overlap >= size) {
    throw new RangeError("chunk overlap must be below the size");
  }
  const clean = text.replace(/\r\n?/g, "\n").trim();
  const chunks: string[] = [];
  let start = 0;
  while (start < clean.length) {
    let end = Math.min(start + size, clean.length);
    if (end < clean.length) {
      const cut = clean.lastIndexOf(" ", end) + 1 || 0;
      const nl = clean.lastIndexOf("\n", end) + 1 || 0;
      const at = Math.max(cut, nl);
      if (at > start + size / 2) end = at;
    }
    const piece = clean.slice(start, end).trim();
    if (piece) chunks.push(piece);
    if (end >= clean.length) break;
    let next = Math.max(end - overlap, start + 1);
    // Start the next chunk at a word boundary inside the overlap.
    const boundary = clean.indexOf(" ", next);
    if (boundary !== -1 && boundary < end) next = boundary + 1;
    start = next;
  }
  return chunks;
}
