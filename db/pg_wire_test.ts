import { PGlite, protocol } from "@electric-sql/pglite";
import nodeAssert from "node:assert/strict";
import { assertEquals } from "../tests/assert.ts";
import { WireWriter } from "./pg_wire.ts";

const wire = protocol.serialize;

Deno.test("wire: messages are byte for byte those of PGlite's serializer", () => {
  const text = 'select $1::text as "é" -- 😀';
  const cases: [Uint8Array, Uint8Array][] = [
    [new WireWriter(1).parse("s1", text).bytes(), wire.parse({ name: "s1", text })],
    [new WireWriter(1).parse("", "begin").bytes(), wire.parse({ text: "begin" })],
    [new WireWriter(1).describePortal().bytes(), wire.describe({ type: "P" })],
    [new WireWriter(1).execute().bytes(), wire.execute({})],
    [new WireWriter(1).closeStatement("s1").bytes(), wire.close({ type: "S", name: "s1" })],
    [new WireWriter(1).query("commit").bytes(), wire.query("commit")],
    [new WireWriter(1).sync().bytes(), wire.sync()],
  ];
  for (const [ours, theirs] of cases) assertEquals([...ours], [...theirs]);
  nodeAssert.throws(() => new WireWriter().parse("", "select 1\0"), TypeError);
});

Deno.test("wire: a batch binds text, NULL and multi-byte values as the engine reads them", async () => {
  const pg = await PGlite.create();
  try {
    const long = "x".repeat(5000);
    const batch = new WireWriter(8)
      .parse("", "select $1::text as a, $2::text as b, $3::text as c, length($4::text) as n")
      .bind("", ["é😀'\"", null, "", long])
      .describePortal()
      .execute()
      .sync();
    const { messages } = await pg.execProtocol(batch.bytes());
    const row = messages.find((m) => m.name === "dataRow") as unknown as { fields: (string | null)[] };
    assertEquals(row.fields, ["é😀'\"", null, "", "5000"]);
  } finally {
    await pg.close();
  }
});
