import { assertEquals } from "../tests/assert.ts";
import { ADMISSIONS_PER_TEXT_ROOM, ConnectionStatements, MAX_PREPARED_TEXT_CHARS } from "./pg_prepared.ts";

Deno.test("ConnectionStatements: what postgres.js keeps per connection is bounded, however many texts clients send", () => {
  const max = 4;
  const kept = new ConnectionStatements(max, 1);
  const none = new Set<string>();
  const admissions = ADMISSIONS_PER_TEXT_ROOM * max;
  for (let i = 0; i < admissions; i++) {
    const how = kept.admit(`select ${i}`, none);
    assertEquals(how.prepare, true, `text ${i} is prepared`);
    assertEquals(how.sent.startsWith(`select ${i}\n`), true);
  }
  assertEquals(kept.size, max);
  // Past its admissions the connection prepares nothing new: the text is sent as is, unnamed.
  assertEquals(kept.admit("select 'new'", none), { sent: "select 'new'", prepare: false });
  // A text still kept stays prepared.
  const last = `select ${admissions - 1}`;
  assertEquals(kept.admit(last, none).prepare, true);
  // A long text is never prepared, on any connection.
  const long = `select '${"x".repeat(MAX_PREPARED_TEXT_CHARS)}'`;
  assertEquals(new ConnectionStatements(max, 2).admit(long, none), { sent: long, prepare: false });
});
