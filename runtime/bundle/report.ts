/** One import the bundler could not take, and why, in words a user can act on. */
export interface BuilderIssue {
  /** The import as the function wrote it, when the bundler said which. */
  specifier: string | null;
  cause: string;
}

/** The first line the builder process writes: its bundle's size (the bytes follow), or its issues. */
export type BuilderReport = { ok: true; bytes: number } | { ok: false; issues: BuilderIssue[] };
