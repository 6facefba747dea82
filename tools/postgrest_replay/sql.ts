// Splits a psql script into statements (strings, quoted identifiers, dollar quotes, comments), and adapts the
// spec's fixture to what a project owner can run.

export function splitSql(text: string): string[] {
  // COPY … FROM STDIN blocks become INSERTs
  text = text.replace(
    /^COPY (.+?) \((.*?)\) FROM STDIN CSV DELIMITER '\|';\n([\s\S]*?)\n\\\.$/gim,
    (_m, table: string, cols: string, data: string) =>
      `INSERT INTO ${table} (${cols}) VALUES ` +
      data.split("\n").map((l) =>
        "(" + l.split("|").map((v) => `'${v.replace(/'/g, "''")}'`).join(", ") + ")"
      )
        .join(", ") +
      ";",
  );
  const out: string[] = [];
  let cur = "";
  let i = 0;
  const n = text.length;
  let lineStart = true;
  while (i < n) {
    const c = text[i];
    // psql meta-command at the start of a line
    if (lineStart && cur.trim() === "" && c === "\\") {
      const e = text.indexOf("\n", i);
      i = e < 0 ? n : e + 1;
      continue;
    }
    lineStart = false;
    if (c === "-" && text[i + 1] === "-") {
      const e = text.indexOf("\n", i);
      i = e < 0 ? n : e;
      continue;
    }
    if (c === "/" && text[i + 1] === "*") {
      let depth = 1;
      let j = i + 2;
      while (j < n && depth > 0) {
        if (text[j] === "/" && text[j + 1] === "*") (depth++, j += 2);
        else if (text[j] === "*" && text[j + 1] === "/") (depth--, j += 2);
        else j++;
      }
      cur += " ";
      i = j;
      continue;
    }
    if (c === "'") {
      const escaped = /[eE]$/.test(cur) && !/[A-Za-z0-9_][eE]$/.test(cur);
      let j = i + 1;
      while (j < n) {
        if (escaped && text[j] === "\\") j += 2;
        else if (text[j] === "'" && text[j + 1] === "'") j += 2;
        else if (text[j] === "'") break;
        else j++;
      }
      cur += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < n) {
        if (text[j] === '"' && text[j + 1] === '"') j += 2;
        else if (text[j] === '"') break;
        else j++;
      }
      cur += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === "$") {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i, i + 64));
      if (m && !/[A-Za-z0-9_]$/.test(cur)) {
        const tag = m[0];
        const e = text.indexOf(tag, i + tag.length);
        const end = e < 0 ? n : e + tag.length;
        cur += text.slice(i, end);
        i = end;
        continue;
      }
    }
    if (c === ";") {
      if (cur.trim()) out.push(cur.trim());
      cur = "";
      i++;
      continue;
    }
    if (c === "\n") lineStart = true;
    cur += c;
    i++;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** Role names of the spec mapped to the platform's (null: the statement is dropped). */
export const ROLE_MAP: Record<string, string | null> = {
  postgrest_test_anonymous: "anon",
  postgrest_test_author: "authenticated",
  postgrest_test_default_role: null,
  postgrest_test_superuser: null,
};

export interface Stmt {
  file: string;
  sql: string;
  searchPath: string | null;
}

/** The fixture's statements, adapted; `dropped` are those never sent, with why. */
export function fixtureStatements(files: Record<string, string>): {
  stmts: Stmt[];
  dropped: { file: string; sql: string; why: string }[];
} {
  const stmts: Stmt[] = [];
  const dropped: { file: string; sql: string; why: string }[] = [];
  let searchPath: string | null = null;
  for (const [file, text] of Object.entries(files)) {
    for (let sql of splitSql(text)) {
      const sp = /^set\s+search_path\s*(=|to)\s*([\s\S]*)$/i.exec(sql);
      if (sp) {
        searchPath = sp[2]!.trim();
        continue;
      }
      if (/^set\s+(check_function_bodies|client_min_messages)/i.test(sql)) continue;
      if (/^(begin|commit)$/i.test(sql)) continue;
      if (/^(create|drop|alter)\s+role\b/i.test(sql) && !/\bset\b/i.test(sql.split("\n")[0]!)) {
        dropped.push({ file, sql, why: "role DDL (roles are the platform's)" });
        continue;
      }
      if (/:DBNAME|:"PGUSER"/.test(sql)) {
        dropped.push({ file, sql, why: "psql variable / database-level setting" });
        continue;
      }
      if (/^create\s+schema\s+public\b/i.test(sql)) {
        dropped.push({ file, sql, why: "public exists" });
        continue;
      }
      let dropFor: string | null = null;
      for (const [from, to] of Object.entries(ROLE_MAP)) {
        const re = new RegExp(`\\b${from}\\b`, "g");
        if (!re.test(sql)) continue;
        if (to === null) {
          // grant/revoke lists: remove the role from a list; otherwise drop the statement
          if (/^(grant|revoke)\b/i.test(sql)) {
            const stripped = sql.replace(new RegExp(`\\s*,\\s*${from}\\b|\\b${from}\\s*,\\s*`, "g"), "");
            if (stripped !== sql) {
              sql = stripped;
              continue;
            }
          }
          dropFor = from;
        } else sql = sql.replace(re, to);
      }
      if (dropFor && /^(grant|revoke|alter\s+(table|function|view))\b/i.test(sql)) {
        dropped.push({ file, sql, why: `role ${dropFor} does not exist on the platform` });
        continue;
      }
      stmts.push({ file, sql, searchPath });
    }
  }
  return { stmts, dropped };
}
