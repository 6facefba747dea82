import { assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql } from "./data_fixture.ts";
import { type Json, startPlatform } from "./harness.ts";

/** A raw-URL case: the query after `/v1/db/`, the expected status, rows (or object) and Content-Range. */
interface ReadCase {
  name: string;
  url: string;
  headers?: Record<string, string>;
  status?: number;
  data?: Json;
  /** Only the ids of the rows, in order (shorthand for `select=id`). */
  ids?: number[];
  range?: string;
  code?: string;
}

const ids = (list: number[]) => list.map((id) => ({ id }));

// Expectations follow PostgREST's documented semantics over the library of tests/data_fixture.ts.
const CASES: ReadCase[] = [
  {
    name: "columns, order, limit",
    url: "books?select=id,title&order=id&limit=2",
    range: "0-1/*",
    data: [
      { id: 1, title: "The Dispossessed" },
      { id: 2, title: "A Wizard of Earthsea" },
    ],
  },
  { name: "eq", url: "books?select=id&id=eq.3", ids: [3], range: "0-0/*" },
  { name: "eq on a boolean", url: "books?select=id&in_print=eq.false", ids: [5] },
  { name: "is on a boolean", url: "books?select=id&in_print=is.true&order=id", ids: [1, 2, 3, 4] },
  { name: "gte on a date", url: "books?select=id&published=gte.1970-01-01", ids: [1] },
  { name: "neq", url: "books?select=id&id=neq.3&order=id", ids: [1, 2, 4, 5] },
  { name: "gt on numeric", url: "books?select=id&price=gt.10&order=id", ids: [1, 4] },
  { name: "gte", url: "books?select=id&price=gte.10&order=id", ids: [1, 3, 4] },
  { name: "lt", url: "books?select=id&price=lt.9&order=id", ids: [2, 5] },
  { name: "lte", url: "books?select=id&price=lte.8.99&order=id", ids: [2, 5] },
  { name: "like with *", url: "books?select=id&title=like.*The*&order=id", ids: [1, 4] },
  { name: "like is case sensitive", url: "books?select=id&title=like.*the*&order=id", ids: [] },
  { name: "ilike", url: "books?select=id&title=ilike.*WIZARD*", ids: [2] },
  { name: "match", url: "books?select=id&title=match.^S", ids: [3] },
  { name: "imatch", url: "books?select=id&title=imatch.^s", ids: [3] },
  { name: "in", url: "books?select=id&id=in.(1,3,5)&order=id", ids: [1, 3, 5] },
  {
    name: "in with quoted values",
    url: 'books?select=id&title=in.("Solaris","The Cyberiad")&order=id',
    ids: [3, 4],
  },
  {
    name: "in with a comma inside quotes",
    url: 'authors?select=id&name=in.("Le Guin, Ursula","Anonymous")',
    ids: [3],
  },
  { name: "is null", url: "books?select=id&rating=is.null", ids: [4] },
  { name: "not.is.null", url: "books?select=id&published=not.is.null&order=id", ids: [1, 2, 3] },
  { name: "is.not_null", url: "books?select=id&rating=is.not_null&order=id", ids: [1, 2, 3, 5] },
  { name: "isdistinct", url: "books?select=id&rating=isdistinct.5&order=id", ids: [2, 4, 5] },
  { name: "fts on tsvector", url: "books?select=id&search=fts.wizard", ids: [2] },
  { name: "plfts with config", url: "books?select=id&search=plfts(english).wizard earthsea", ids: [2] },
  { name: "phfts", url: "books?select=id&search=phfts(english).wizard of earthsea", ids: [2] },
  { name: "wfts", url: "books?select=id&search=wfts.cyberiad or solaris&order=id", ids: [3, 4] },
  { name: "fts on a text column", url: "books?select=id&title=fts(english).dispossessed", ids: [1] },
  { name: "cs on an array", url: "books?select=id&tags=cs.{scifi,classic}", ids: [1] },
  { name: "cd on an array", url: "books?select=id&tags=cd.{scifi,humor,fantasy}&order=id", ids: [3, 4, 5] },
  { name: "ov on an array", url: "books?select=id&tags=ov.{humor,fantasy}&order=id", ids: [2, 4] },
  // Parentheses are a range's exclusive bounds, passed as written (PostgREST v14): 386 is in [1,387).
  { name: "ov on a range, exclusive bounds", url: "books?select=id&pages=ov.(385,400)&order=id", ids: [1] },
  { name: "cs on jsonb", url: 'authors?select=id&meta=cs.{"country":"PL"}', ids: [2] },
  {
    name: "cd on jsonb",
    url: 'authors?select=id&meta=cd.{"country":"PL","awards":{"hugo":0},"langs":["pl","en"],"x":1}',
    ids: [2],
  },
  { name: "sl on a range", url: "books?select=id&pages=sl.[300,400)&order=id", ids: [2, 3, 4] },
  { name: "sr on a range", url: "books?select=id&pages=sr.[-10,0)&order=id", ids: [1, 2, 3, 4] },
  { name: "nxr on a range", url: "books?select=id&pages=nxr.[1,210)&order=id", ids: [2, 3] },
  { name: "nxl on a range", url: "books?select=id&pages=nxl.[1,2)&order=id", ids: [1, 2, 3, 4] },
  { name: "adj on a range", url: "books?select=id&pages=adj.[387,400)", ids: [1] },
  { name: "like(any)", url: "books?select=id&title=like(any).{*Solaris*,*Beowulf*}&order=id", ids: [3, 5] },
  { name: "like(all)", url: "books?select=id&title=like(all).{*The*,*Cy*}", ids: [4] },
  { name: "eq(any)", url: "books?select=id&id=eq(any).{1,2}&order=id", ids: [1, 2] },
  { name: "gt(all)", url: "books?select=id&price=gt(all).{9,10}&order=id", ids: [1, 4] },
  { name: "ilike(any)", url: "books?select=id&title=ilike(any).{*solaris*,*beo*}&order=id", ids: [3, 5] },
  { name: "not.in", url: "books?select=id&id=not.in.(1,2,3)&order=id", ids: [4, 5] },
  { name: "not.eq", url: "books?select=id&rating=not.eq.5&order=id", ids: [2, 5] },
  { name: "or", url: "books?select=id&or=(id.eq.1,rating.is.null)&order=id", ids: [1, 4] },
  {
    name: "or with nested and",
    url: "books?select=id&or=(id.eq.5,and(price.gt.10,rating.eq.5))&order=id",
    ids: [1, 5],
  },
  { name: "not.or", url: "books?select=id&not.or=(id.lt.3,id.gt.4)&order=id", ids: [3, 4] },
  { name: "and", url: "books?select=id&and=(price.gt.5,price.lt.10)&order=id", ids: [2, 5] },
  {
    name: "or with quoted values",
    url: 'books?select=id&or=(title.eq."Solaris",title.eq."The Dispossessed")&order=id',
    ids: [1, 3],
  },
  { name: "or with in", url: "books?select=id&or=(id.in.(1,2),rating.is.null)&order=id", ids: [1, 2, 4] },
  {
    name: "or with not and nested or",
    url: "books?select=id&or=(not.and(id.gt.1,or(rating.eq.5,rating.eq.4)),id.eq.5)&order=id",
    ids: [1, 5],
  },
  {
    name: "or on a JSON path",
    url: "authors?select=id&or=(meta->>country.eq.PL,meta->awards->>hugo.eq.5)&order=id",
    ids: [1, 2],
  },
  {
    name: "order desc nullslast",
    url: "books?select=id&order=rating.desc.nullslast,id",
    ids: [1, 3, 2, 5, 4],
  },
  {
    name: "order asc nullsfirst",
    url: "books?select=id&order=rating.asc.nullsfirst,id",
    ids: [4, 5, 2, 1, 3],
  },
  { name: "order desc puts nulls first", url: "books?select=id&order=rating.desc,id", ids: [4, 1, 3, 2, 5] },
  {
    name: "order by a JSON path",
    url: "authors?select=id&order=meta->awards->hugo.desc.nullslast",
    ids: [1, 2, 3],
  },
  {
    name: "JSON paths and renames",
    url:
      "authors?select=name,country:meta->>country,hugo:meta->awards->hugo,first:meta->langs->>0&id=lt.3&order=id",
    data: [
      { name: "Ursula Le Guin", country: "US", hugo: 5, first: "en" },
      { name: "Stanisław Lem", country: "PL", hugo: 0, first: "pl" },
    ],
  },
  { name: "JSON path default name", url: "authors?select=meta->>country&id=eq.1", data: [{ country: "US" }] },
  { name: "filter on a JSON path", url: "authors?select=id&meta->>country=eq.PL", ids: [2] },
  { name: "filter on a nested JSON number", url: "authors?select=id&meta->awards->hugo=gt.1", ids: [1] },
  {
    name: "cast",
    url: "books?select=id,price::text,rating::float8&id=eq.1",
    data: [{ id: 1, price: "12.50", rating: 5 }],
  },
  { name: "rename", url: "books?select=book:title&id=eq.3", data: [{ book: "Solaris" }] },
  {
    name: "embed to-one",
    url: "books?select=title,authors(name)&id=in.(3,5)&order=id",
    data: [
      { title: "Solaris", authors: { name: "Stanisław Lem" } },
      { title: "Beowulf", authors: null },
    ],
  },
  {
    name: "embed to-one with alias",
    url: "books?select=title,writer:authors(name)&id=eq.1",
    data: [
      { title: "The Dispossessed", writer: { name: "Ursula Le Guin" } },
    ],
  },
  {
    name: "embed through the FK column",
    url: "books?select=title,author_id(name)&id=eq.1",
    data: [
      { title: "The Dispossessed", author_id: { name: "Ursula Le Guin" } },
    ],
  },
  {
    name: "embed to-many with order",
    url: "authors?select=name,books(title)&id=eq.2&books.order=id",
    data: [
      { name: "Stanisław Lem", books: [{ title: "Solaris" }, { title: "The Cyberiad" }] },
    ],
  },
  {
    name: "embed to-many, empty",
    url: "authors?select=name,books(title)&id=eq.3",
    data: [{ name: "Anonymous", books: [] }],
  },
  {
    name: "nested filter on an embed",
    url: "authors?select=id,books(id)&books.rating=eq.5&order=id",
    data: [
      { id: 1, books: [{ id: 1 }] },
      { id: 2, books: [{ id: 3 }] },
      { id: 3, books: [] },
    ],
  },
  {
    name: "embed limit and offset",
    url: "authors?select=id,books(id)&id=eq.1&books.order=id.desc&books.limit=1&books.offset=1",
    data: [
      { id: 1, books: [{ id: 1 }] },
    ],
  },
  {
    name: "embed or filter",
    url: "authors?select=id,books(id)&id=eq.2&books.or=(id.eq.4,rating.eq.1)",
    data: [{ id: 2, books: [{ id: 4 }] }],
  },
  {
    name: "!inner filters the parents",
    url: "authors?select=name,books!inner(title)&books.title=eq.Solaris",
    data: [
      { name: "Stanisław Lem", books: [{ title: "Solaris" }] },
    ],
  },
  {
    name: "!inner on a to-one",
    url: "books?select=id,authors!inner(name)&authors.name=eq.Anonymous",
    data: [],
  },
  {
    name: "!fk by constraint and by column",
    url:
      "messages?select=body,sender:authors!messages_sender_fkey(name),receiver:authors!receiver_id(name)&order=id",
    data: [
      { body: "hello", sender: { name: "Ursula Le Guin" }, receiver: { name: "Stanisław Lem" } },
      { body: "witaj", sender: { name: "Stanisław Lem" }, receiver: { name: "Ursula Le Guin" } },
    ],
  },
  {
    name: "ambiguous embed is PGRST201",
    url: "messages?select=body,authors(name)",
    status: 300,
    code: "PGRST201",
  },
  {
    name: "one-to-one is an object",
    url: "authors?select=id,bios(text)&id=in.(1,2)&order=id",
    data: [
      { id: 1, bios: { text: "Born in Berkeley" } },
      { id: 2, bios: null },
    ],
  },
  {
    name: "many-to-many through a junction",
    url: "genres?select=name,books(id)&order=id&books.order=id",
    data: [
      { name: "science fiction", books: ids([1, 3, 4]) },
      { name: "fantasy", books: ids([2]) },
    ],
  },
  {
    name: "two levels of embedding",
    url: "authors?select=id,books(id,reviews(stars))&id=eq.1&books.order=id&books.reviews.order=stars.desc",
    data: [
      { id: 1, books: [{ id: 1, reviews: [{ stars: 5 }, { stars: 4 }] }, { id: 2, reviews: [] }] },
    ],
  },
  {
    name: "star with an embed",
    url: "reviews?select=*,books(id)&id=eq.3",
    data: [
      { id: 3, book_id: 3, stars: 5, comment: "Ocean", books: { id: 3 } },
    ],
  },
  {
    name: "spread a to-one",
    url: "books?select=title,...authors(author:name)&id=eq.3",
    data: [
      { title: "Solaris", author: "Stanisław Lem" },
    ],
  },
  {
    name: "spread with a star",
    url: "bios?select=text,...authors(*)",
    data: [
      {
        text: "Born in Berkeley",
        id: 1,
        name: "Ursula Le Guin",
        email: "ursula@example.com",
        meta: {
          country: "US",
          awards: { hugo: 5 },
          langs: ["en"],
        },
      },
    ],
  },
  {
    name: "spread a to-many: its columns become arrays",
    url: "authors?select=...books(id)&order=id&books.order=id",
    data: [{ id: [1, 2] }, { id: [3, 4] }, { id: [] }],
  },
  {
    name: "embed is null",
    url: "books?select=id,authors(id)&authors=is.null",
    data: [{ id: 5, authors: null }],
  },
  {
    name: "embed not null, empty embed hidden",
    url: "books?select=id,authors()&authors=not.is.null&order=id",
    ids: [1, 2, 3, 4],
  },
  {
    name: "embed not null with its filter",
    url: "books?select=id,authors()&authors.name=like.Stan*&authors=not.is.null&order=id",
    ids: [3, 4],
  },
  {
    name: "order by a to-one embed",
    url: "books?select=id,authors(name)&id=lt.5&order=authors(name).asc,id",
    data: [
      { id: 3, authors: { name: "Stanisław Lem" } },
      { id: 4, authors: { name: "Stanisław Lem" } },
      { id: 1, authors: { name: "Ursula Le Guin" } },
      { id: 2, authors: { name: "Ursula Le Guin" } },
    ],
  },
  {
    name: "order by a to-many embed is PGRST118",
    url: "authors?select=id,books(id)&order=books(id)",
    status: 400,
    code: "PGRST118",
  },
  {
    name: "order by a resource not embedded is PGRST108",
    url: "books?select=id&order=authors(name)",
    status: 400,
    code: "PGRST108",
  },
  {
    name: "embed without a relationship is PGRST200",
    url: "books?select=id,genres_typo(id)",
    status: 400,
    code: "PGRST200",
  },
  {
    name: "Range header",
    url: "books?select=id&order=id",
    headers: { range: "1-2" },
    ids: [2, 3],
    range: "1-2/*",
  },
  {
    name: "Range header with count is 206",
    url: "books?select=id&order=id",
    headers: { range: "1-2", prefer: "count=exact" },
    status: 206,
    ids: [2, 3],
    range: "1-2/5",
  },
  {
    name: "open Range header",
    url: "books?select=id&order=id",
    headers: { range: "3-" },
    ids: [4, 5],
    range: "3-4/*",
  },
  { name: "limit and offset", url: "books?select=id&order=id&limit=2&offset=3", ids: [4, 5], range: "3-4/*" },
  {
    name: "limit and offset with count",
    url: "books?select=id&order=id&limit=2&offset=3",
    headers: { prefer: "count=exact" },
    status: 206,
    ids: [4, 5],
    range: "3-4/5",
  },
  {
    name: "count of everything is 200",
    url: "books?select=id&order=id",
    headers: { prefer: "count=exact" },
    ids: [1, 2, 3, 4, 5],
    range: "0-4/5",
  },
  {
    name: "count with a filter",
    url: "books?select=id&order=id&limit=1&tags=cs.{scifi}",
    headers: { prefer: "count=exact" },
    status: 206,
    ids: [1],
    range: "0-0/3",
  },
  { name: "empty result", url: "books?id=eq.99", data: [], range: "*/*" },
  {
    name: "empty result with count",
    url: "books?id=eq.99",
    headers: { prefer: "count=exact" },
    data: [],
    range: "*/0",
  },
  {
    name: "offset past the end with count is 416",
    url: "books?offset=10",
    headers: { prefer: "count=exact" },
    status: 416,
    code: "PGRST103",
    range: "*/5",
  },
  {
    name: "one object",
    url: "books?select=id&id=eq.1",
    headers: { accept: "application/vnd.pgrst.object+json" },
    data: { id: 1 },
    range: "0-0/*",
  },
  {
    name: "one object of many is 406",
    url: "books?select=id",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 406,
    code: "PGRST116",
  },
  {
    name: "one object of none is 406",
    url: "books?id=eq.99",
    headers: { accept: "application/vnd.pgrst.object+json" },
    status: 406,
    code: "PGRST116",
  },
  { name: "unknown column is 42703", url: "books?select=nope", status: 400, code: "42703" },
  { name: "unknown filter column is 42703", url: "books?nope=eq.1", status: 400, code: "42703" },
  { name: "unknown table is 404 PGRST205", url: "nope", status: 404, code: "PGRST205" },
  { name: "wrong type is 400 22P02", url: "books?id=eq.abc", status: 400, code: "22P02" },
];

Deno.test("data API reads: PostgREST semantics on /v1/db, same answers on /rest/v1", async (t) => {
  const p = await startPlatform({ DATA_MAX_ROWS: "1000" });
  try {
    await ownerSql(p, LIBRARY_SQL);
    const headers = { apikey: p.secretKey };

    for (const c of CASES) {
      await t.step(c.name, async () => {
        const expected = c.ids ? ids(c.ids) : c.data;
        const status = c.status ?? 200;
        const env = await p.fetch(`/v1/db/${c.url}`, { headers: { ...headers, ...c.headers } });
        const envBody = await env.json();
        assertEquals(env.status, status, JSON.stringify(envBody));
        const rest = await p.fetch(`/rest/v1/${c.url}`, { headers: { ...headers, ...c.headers } });
        const restBody = await rest.json();
        assertEquals(rest.status, status);
        if (c.code) {
          assertEquals(envBody.error.code, c.code);
          assertEquals(restBody.code, c.code);
          assertEquals(restBody.message, envBody.error.message);
          if (c.range) {
            assertEquals([env.headers.get("content-range"), rest.headers.get("content-range")], [
              c.range,
              c.range,
            ]);
          }
          return;
        }
        assertEquals(envBody, { data: expected, meta: null });
        assertEquals(restBody, expected);
        if (c.range) assertEquals(env.headers.get("content-range"), c.range);
        assertEquals(rest.headers.get("content-range"), env.headers.get("content-range"));
      });
    }

    await t.step("HEAD answers the count without a body", async () => {
      for (const prefix of ["/v1/db", "/rest/v1"]) {
        const res = await p.fetch(`${prefix}/books?tags=cs.{scifi}`, {
          method: "HEAD",
          headers: { ...headers, prefer: "count=exact" },
        });
        assertEquals(res.status, 200);
        assertEquals(res.headers.get("content-range"), "0-2/3");
        assertEquals(await res.text(), "");
      }
    });

    await t.step("count=planned and count=estimated give a number", async () => {
      for (const count of ["planned", "estimated"]) {
        const res = await p.fetch("/v1/db/books?select=id&limit=1", {
          headers: { ...headers, prefer: `count=${count}` },
        });
        await res.body?.cancel();
        const range = res.headers.get("content-range") ?? "";
        assertEquals(/^0-0\/\d+$/.test(range), true, range);
        assertEquals(res.headers.get("preference-applied"), `count=${count}`);
      }
    });

    await t.step("the max rows cap limits every read", async () => {
      const capped = await startPlatform({ DATA_MAX_ROWS: "2" });
      try {
        await ownerSql(capped, LIBRARY_SQL);
        const res = await capped.fetch("/v1/db/books?select=id&order=id&limit=100", {
          headers: { apikey: capped.secretKey, prefer: "count=exact" },
        });
        assertEquals(res.status, 206);
        assertEquals(res.headers.get("content-range"), "0-1/5");
        assertEquals((await res.json()).data, ids([1, 2]));
      } finally {
        await capped.close();
      }
    });

    await t.step("a table created through /v1/sql is visible at once", async () => {
      await ownerSql(p, "create table late (id int primary key); insert into late values (7);");
      const res = await p.fetch("/v1/db/late", { headers });
      assertEquals(await res.json(), { data: [{ id: 7 }], meta: null });
      await ownerSql(p, "alter table late add column label text default 'x'");
      assertEquals((await (await p.fetch("/v1/db/late", { headers })).json()).data, [{ id: 7, label: "x" }]);
    });
  } finally {
    await p.close();
  }
});
