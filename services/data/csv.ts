function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Turns the JSON rows of a data answer into CSV (RFC 4180) as PostgREST answers `Accept: text/csv`: a header of
 * the first row's keys, null as an empty field, objects and arrays as JSON text.
 */
export function rowsToCsv(json: string): string {
  const rows = JSON.parse(json) as Record<string, unknown>[];
  if (!Array.isArray(rows) || rows.length === 0) return "";
  const keys = Object.keys(rows[0]!);
  const lines = [keys.map(cell).join(",")];
  for (const row of rows) lines.push(keys.map((k) => cell(row[k])).join(","));
  return lines.join("\n");
}
