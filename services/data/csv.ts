/**
 * Parses a `text/csv` request body as PostgREST does: the first row names the columns, every later row is one
 * object of text values, and the unquoted or quoted text `NULL` is null. Quoted fields may hold commas, quotes
 * (doubled) and line breaks; lines end with LF or CRLF. Throws a message for 400 PGRST102 when the text is not
 * CSV or a row has another number of fields than the header.
 */
export function parseCsvBody(text: string): Record<string, string | null>[] {
  const records = csvRecords(text);
  if (records.length === 0) return [];
  const header = records[0]!;
  if (new Set(header).size !== header.length) throw new CsvError("The CSV header names a column twice");
  return records.slice(1).map((fields, i) => {
    if (fields.length !== header.length) {
      throw new CsvError(
        `Line ${i + 2} has ${fields.length} field${
          fields.length === 1 ? "" : "s"
        }, the header ${header.length}`,
      );
    }
    const row: Record<string, string | null> = {};
    header.forEach((name, j) => row[name] = fields[j] === "NULL" ? null : fields[j]!);
    return row;
  });
}

/** A body that is not CSV, or rows that do not fit its header; the message says which. */
export class CsvError extends Error {}

/** The records of RFC 4180 text: fields split on commas, quoted fields unescaped; a last empty line ignored. */
function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let fields: string[] = [];
  let i = 0;
  const n = text.length;
  if (n === 0) return records;
  for (;;) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        const close = text.indexOf('"', i);
        if (close < 0) throw new CsvError("A quoted CSV field is not closed");
        field += text.slice(i, close);
        i = close + 1;
        if (text[i] === '"') {
          field += '"';
          i++;
        } else break;
      }
      if (i < n && text[i] !== "," && text[i] !== "\n" && text[i] !== "\r") {
        throw new CsvError("A quoted CSV field is followed by text before the next comma");
      }
    } else {
      let end = i;
      while (end < n && text[end] !== "," && text[end] !== "\n" && text[end] !== "\r") end++;
      field = text.slice(i, end);
      if (field.includes('"')) throw new CsvError("A CSV field that is not quoted holds a quote");
      i = end;
    }
    fields.push(field);
    if (i < n && text[i] === ",") {
      i++;
      continue;
    }
    // A blank line holds no record.
    if (fields.length > 1 || fields[0] !== "") records.push(fields);
    fields = [];
    if (i < n && text[i] === "\r") i++;
    if (i < n && text[i] === "\n") i++;
    if (i >= n) return records;
  }
}
