// Aggregates, computed fields and relationships, and spread embeds on /rest/v1, row by row as PostgREST answers.
import { assert, assertEquals } from "./assert.ts";
import { LIBRARY_SQL, ownerSql, restClient } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create function title_upper(books) returns text language sql stable as $$ select upper($1.title) $$;
create function author_books(authors) returns setof books language sql stable as $$
  select * from books where author_id = $1.id $$;
create function book_author(books) returns authors language sql stable as $$
  select * from authors where id = $1.author_id $$;
create function top_review(books) returns setof reviews rows 1 language sql stable as $$
  select * from reviews where book_id = $1.id order by stars desc, id limit 1 $$;

-- PostgREST's factories (its spec fixture), whose nested spreads' rows come in the order its joins give.
create table factories (id int primary key, name text);
create table process_categories (id int primary key, name text);
create table processes (id int primary key, name text, factory_id int references factories,
  category_id int references process_categories);
create table process_costs (process_id int primary key references processes, cost numeric);
create table supervisors (id int primary key, name text);
create table process_supervisor (process_id int references processes, supervisor_id int references supervisors,
  primary key (process_id, supervisor_id));
insert into factories values (1, 'Factory A'), (2, 'Factory B'), (3, 'Factory C'), (4, 'Factory D');
insert into process_categories values (1, 'Batch'), (2, 'Mass');
insert into processes values (1, 'Process A1', 1, 1), (2, 'Process A2', 1, 2), (3, 'Process B1', 2, 1),
  (4, 'Process B2', 2, 1), (5, 'Process C1', 3, 2), (6, 'Process C2', 3, 2), (7, 'Process XX', 3, 2),
  (8, 'Process YY', 3, 2);
insert into process_costs values (1, 150.00), (2, 200.00), (3, 180.00), (4, 70.00), (5, 40.00), (6, 70.00),
  (8, 40.00);
insert into supervisors values (1, 'Mary'), (2, 'John'), (3, 'Peter'), (4, 'Sarah'), (5, 'Jane');
insert into process_supervisor values (1, 1), (2, 2), (3, 3), (3, 4), (4, 1), (4, 2), (5, 3), (6, 3);
`;

const NOT_ALLOWED = err("PGRST123", "Use of aggregate functions is not allowed");

const CASES: WireCase[] = [
  // Aggregates of the root.
  { name: "count()", url: "books?select=count()", status: 200, json: [{ count: 5 }] },
  { name: "col.sum()", url: "books?select=price.sum()", status: 200, json: [{ sum: 51.74 }] },
  {
    name: "aliases and a filter",
    url: "books?select=total:price.sum(),n:count()&author_id=not.is.null",
    status: 200,
    json: [{ total: 46.49, n: 4 }],
  },
  {
    name: "max and min, named after the function",
    url: "books?select=rating.max(),rating.min()",
    status: 200,
    json: [{ max: 5, min: 3 }],
  },
  { name: "col.count() skips nulls", url: "books?select=rating.count()", status: 200, json: [{ count: 4 }] },
  { name: "the aggregate cast", url: "books?select=rating.avg()::int", status: 200, json: [{ avg: 4 }] },
  { name: "the column cast", url: "books?select=price::int.sum()", status: 200, json: [{ sum: 52 }] },
  {
    name: "the result cast to text",
    url: "books?select=price.sum()::text",
    status: 200,
    json: [{ sum: "51.74" }],
  },
  { name: "count()::text", url: "books?select=n:count()::text", status: 200, json: [{ n: "5" }] },
  {
    name: "a JSON path cast then aggregated",
    url: "authors?select=meta->awards->hugo::int.sum()",
    status: 200,
    json: [{ sum: 5 }],
  },
  {
    name: "GROUP BY the other columns, ordered",
    url: "books?select=author_id,count()&order=author_id.nullsfirst",
    status: 200,
    json: [{ author_id: null, count: 1 }, { author_id: 1, count: 2 }, { author_id: 2, count: 2 }],
  },
  {
    name: "GROUP BY a renamed column",
    url: "books?select=printed:in_print,total:price.sum()&order=in_print",
    status: 200,
    json: [{ printed: false, total: 5.25 }, { printed: true, total: 46.49 }],
  },
  {
    name: "* with an aggregate groups by every column",
    url: "authors?select=*,count()&id=eq.3",
    status: 200,
    json: [{ id: 3, name: "Anonymous", email: null, meta: null, count: 1 }],
  },
  {
    name: "limit counts groups",
    url: "books?select=author_id,count()&order=author_id&limit=1",
    status: 200,
    json: [{ author_id: 1, count: 2 }],
  },
  // Aggregates and embedded resources.
  {
    name: "an aggregate inside a to-many embed",
    url: "authors?select=name,books(count())&order=id",
    status: 200,
    json: [
      { name: "Ursula Le Guin", books: [{ count: 2 }] },
      { name: "Stanisław Lem", books: [{ count: 2 }] },
      { name: "Anonymous", books: [{ count: 0 }] },
    ],
  },
  {
    name: "an aggregate inside an embed, grouped there",
    url: "authors?select=id,books(in_print,rating.sum())&id=eq.2",
    status: 200,
    json: [{ id: 2, books: [{ in_print: true, sum: 5 }] }],
  },
  {
    name: "grouped by a to-one embed",
    url: "books?select=price.sum(),authors(name)&author_id=eq.1",
    status: 200,
    json: [{ sum: 21.49, authors: { name: "Ursula Le Guin" } }],
  },
  {
    name: "grouped by a to-one spread",
    url: "books?select=price.sum(),...authors(name)&author_id=eq.2",
    status: 200,
    json: [{ sum: 25, name: "Stanisław Lem" }],
  },
  {
    name: "aggregates of a to-one spread are done in the parent's groups",
    url: "books?select=in_print,...authors(id.count(),id.max())&order=in_print",
    status: 200,
    json: [{ in_print: false, count: 0, max: null }, { in_print: true, count: 4, max: 2 }],
  },
  {
    name: "count() of a to-one spread counts the rows that have one",
    url: "books?select=...authors(count())",
    status: 200,
    json: [{ count: 4 }],
  },
  {
    name: "aggregates rise through nested to-one spreads",
    url: "reviews?select=...books(...authors(n:count(),last:name.max()))",
    status: 200,
    json: [{ n: 4, last: "Ursula Le Guin" }],
  },
  // A to-one spread is a lateral join, as PostgREST's: its columns group and order the parent's aggregates.
  {
    name: "a spread's column and count(), ordered by the spread",
    url: "books?select=...authors(id,count())&author_id=not.is.null&order=authors(id)",
    status: 200,
    json: [{ id: 1, count: 2 }, { id: 2, count: 2 }],
  },
  {
    name: "renamed in the spread, ordered by the new name",
    url: "books?select=...authors(who:id,n:count())&author_id=not.is.null&order=authors(who).desc",
    status: 200,
    json: [{ who: 2, n: 2 }, { who: 1, n: 2 }],
  },
  {
    name: "the parent's aggregate beside a spread's",
    url:
      "books?select=total:price.sum(),...authors(name,n:id.count())&author_id=not.is.null&order=authors(name)",
    status: 200,
    json: [{ total: 25, name: "Stanisław Lem", n: 2 }, { total: 21.49, name: "Ursula Le Guin", n: 2 }],
  },
  {
    name: "aggregates in a to-many spread → 400 PGRST127",
    url: "authors?select=name,...books(rating.sum())",
    status: 400,
    json: err(
      "PGRST127",
      "Feature not implemented",
      "Aggregates are not implemented for one-to-many or many-to-many spreads.",
    ),
  },
  // Spread embeds on to-many relationships: each column an array.
  {
    name: "a to-many spread: the column becomes an array, in the embed's order",
    url: "authors?select=name,...books(title)&id=eq.1&books.order=id",
    status: 200,
    json: [{ name: "Ursula Le Guin", title: ["The Dispossessed", "A Wizard of Earthsea"] }],
  },
  {
    name: "a to-many spread with renames, nulls kept",
    url: "authors?select=name,...books(book:id,rating)&id=eq.2&books.order=id",
    status: 200,
    json: [{ name: "Stanisław Lem", book: [3, 4], rating: [5, null] }],
  },
  {
    name: "a to-many spread with no rows gives empty arrays",
    url: "authors?select=name,...books(title)&id=eq.3",
    status: 200,
    json: [{ name: "Anonymous", title: [] }],
  },
  {
    name: "a to-many spread with a limit",
    url: "authors?select=...books(id)&id=eq.1&books.order=id.desc&books.limit=1",
    status: 200,
    json: [{ id: [2] }],
  },
  {
    name: "a many-to-many spread",
    url: "books?select=id,...genres(genre:name)&id=eq.2",
    status: 200,
    json: [{ id: 2, genre: ["fantasy"] }],
  },
  {
    name: "a to-many spread with a nested embed",
    url: "authors?select=...books(title,reviews(stars))&id=eq.2&books.order=id&books.reviews.order=id",
    status: 200,
    json: [{ title: ["Solaris", "The Cyberiad"], reviews: [[{ stars: 5 }], [{ stars: 3 }]] }],
  },
  {
    name: "a to-many spread of * lists every column",
    url: "books?select=...reviews(*)&id=eq.3",
    status: 200,
    json: [{ id: [3], book_id: [3], stars: [5], comment: ["Ocean"] }],
  },
  {
    name: "a to-many spread with !inner and a filter of its own",
    url: "authors?select=name,...books!inner(title)&books.title=eq.Solaris",
    status: 200,
    json: [{ name: "Stanisław Lem", title: ["Solaris"] }],
  },
  // Row order as PostgREST's joins give it (its SpreadQueriesSpec, AggregateFunctionsSpec): a spread or a to-one
  // embed is a lateral join the planner may join by hash, a to-many spread one aggregate of the related rows.
  {
    name: "order: a to-one spread in a to-many spread",
    url:
      "factories?select=factory:name,...processes(process:name,...process_costs(process_costs:cost))&order=name",
    status: 200,
    json: [
      { factory: "Factory A", process: ["Process A1", "Process A2"], process_costs: [150, 200] },
      { factory: "Factory B", process: ["Process B1", "Process B2"], process_costs: [180, 70] },
      {
        factory: "Factory C",
        process: ["Process C1", "Process C2", "Process YY", "Process XX"],
        process_costs: [40, 70, 40, null],
      },
      { factory: "Factory D", process: [], process_costs: [] },
    ],
  },
  {
    name: "order: a many-to-one spread in a to-many spread",
    url:
      "factories?select=factory:name,...processes(process:name,...process_categories(categories:name))&order=name",
    status: 200,
    json: [
      { factory: "Factory A", process: ["Process A1", "Process A2"], categories: ["Batch", "Mass"] },
      { factory: "Factory B", process: ["Process B2", "Process B1"], categories: ["Batch", "Batch"] },
      {
        factory: "Factory C",
        process: ["Process YY", "Process XX", "Process C2", "Process C1"],
        categories: ["Mass", "Mass", "Mass", "Mass"],
      },
      { factory: "Factory D", process: [], categories: [] },
    ],
  },
  {
    name: "order: a many-to-one embed in a to-many spread",
    url: "factories?select=factory:name,...processes(process:name,process_categories(name))&order=name",
    status: 200,
    json: [
      {
        factory: "Factory A",
        process: ["Process A1", "Process A2"],
        process_categories: [{ name: "Batch" }, { name: "Mass" }],
      },
      {
        factory: "Factory B",
        process: ["Process B2", "Process B1"],
        process_categories: [{ name: "Batch" }, { name: "Batch" }],
      },
      {
        factory: "Factory C",
        process: ["Process YY", "Process XX", "Process C2", "Process C1"],
        process_categories: [{ name: "Mass" }, { name: "Mass" }, { name: "Mass" }, { name: "Mass" }],
      },
      { factory: "Factory D", process: [], process_categories: [] },
    ],
  },
  {
    name: "order: the groups of an aggregate in nested to-one spreads",
    url: "process_supervisor?select=...processes(factory_id,...process_costs(cost.sum()))",
    status: 200,
    json: [{ factory_id: 3, sum: 110 }, { factory_id: 2, sum: 500 }, { factory_id: 1, sum: 350 }],
  },
  {
    name: "a to-many spread with !inner keeps the parents that have rows",
    url: "factories?select=name,...processes!inner(id)&order=id&processes.order=id&processes.id=lt.4",
    status: 200,
    json: [{ name: "Factory A", id: [1, 2] }, { name: "Factory B", id: [3] }],
  },
  // Computed fields.
  {
    name: "a computed field in select",
    url: "books?select=id,title_upper&id=eq.1",
    status: 200,
    json: [{ id: 1, title_upper: "THE DISPOSSESSED" }],
  },
  {
    name: "a computed field is not in *",
    url: "books?select=*&id=eq.5",
    status: 200,
    json: [{
      id: 5,
      author_id: null,
      title: "Beowulf",
      price: 5.25,
      published: null,
      tags: [],
      rating: 3,
      pages: null,
      in_print: false,
      search: "'beowulf':1",
    }],
  },
  {
    name: "a computed field filtered",
    url: "books?select=id&title_upper=eq.SOLARIS",
    status: 200,
    json: [{ id: 3 }],
  },
  {
    name: "a computed field ordered",
    url: "books?select=id&order=title_upper.desc&limit=2",
    status: 200,
    json: [{ id: 1 }, { id: 4 }],
  },
  {
    name: "a computed field renamed and cast",
    url: "books?select=t:title_upper::varchar&id=eq.3",
    status: 200,
    json: [{ t: "SOLARIS" }],
  },
  {
    name: "a computed field aggregated",
    url: "books?select=title_upper.max()",
    status: 200,
    json: [{ max: "THE DISPOSSESSED" }],
  },
  // Computed relationships.
  {
    name: "a computed to-many relationship",
    url: "authors?select=name,author_books(title)&id=eq.2&author_books.order=id",
    status: 200,
    json: [{ name: "Stanisław Lem", author_books: [{ title: "Solaris" }, { title: "The Cyberiad" }] }],
  },
  {
    // A function returning one composite gives a row of nulls when it finds none, as PostgreSQL calls it.
    name: "a computed to-one relationship",
    url: "books?select=id,book_author(name)&id=in.(3,5)&order=id",
    status: 200,
    json: [{ id: 3, book_author: { name: "Stanisław Lem" } }, { id: 5, book_author: { name: null } }],
  },
  {
    name: "a computed setof with rows 1 is to-one",
    url: "books?select=id,top_review(stars,comment)&id=eq.1",
    status: 200,
    json: [{ id: 1, top_review: { stars: 5, comment: "Ambiguous utopia" } }],
  },
  {
    name: "a computed relationship spread",
    url: "books?select=id,...book_author(author:name)&id=eq.1",
    status: 200,
    json: [{ id: 1, author: "Ursula Le Guin" }],
  },
  {
    name: "a computed relationship filtered by !inner",
    url: "books?select=id,book_author!inner(name)&book_author.name=like.Stan*&order=id",
    status: 200,
    json: [{ id: 3, book_author: { name: "Stanisław Lem" } }, {
      id: 4,
      book_author: { name: "Stanisław Lem" },
    }],
  },
  // Errors of the grammar.
  {
    name: "an unknown aggregate → 400 PGRST100",
    url: "books?select=price.median()",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse select parameter (price.median())" (line 1, column 7)',
      'unexpected "m" expecting "sum", "avg", "count", "max" or "min"',
    ),
  },
  {
    name: "an aggregate of an unknown column → 400 42703",
    url: "books?select=nope.sum()",
    status: 400,
    json: err("42703", "column books.nope does not exist"),
  },
  {
    name: "a bad aggregate cast → 400 PGRST100",
    url: "books?select=price.sum()::a-b",
    status: 400,
  },
  {
    name: "sum of a type without one → 404 42883",
    url: "books?select=title.sum()",
    status: 404,
  },
  // Aggregates of the rows a write returns (PostgREST reads them as it reads a table); rolled back.
  {
    name: "POST ?select=count(): the rows inserted",
    method: "POST",
    url: "books?select=count()",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '[{"id":10,"title":"x"},{"id":11,"title":"y"}]',
    status: 201,
    json: [{ count: 2 }],
    expect: { "content-range": "*/*" },
  },
  {
    name: "POST grouped by the other columns, ordered",
    method: "POST",
    url: "books?select=author_id,n:count(),total:price.sum()&order=author_id",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '[{"id":10,"author_id":2,"title":"x","price":3},' +
      '{"id":11,"author_id":1,"title":"y","price":1},{"id":12,"author_id":1,"title":"z","price":2}]',
    status: 201,
    json: [{ author_id: 1, n: 2, total: 3 }, { author_id: 2, n: 1, total: 3 }],
  },
  {
    name: "POST of two rows, one object asked for: the one group is the object",
    method: "POST",
    url: "books?select=count()",
    headers: { prefer: "return=representation, tx=rollback", accept: "application/vnd.pgrst.object+json" },
    body: '[{"id":10,"title":"x"},{"id":11,"title":"y"}]',
    status: 201,
    json: { count: 2 },
  },
  {
    name: "PATCH: the groups are the rows of Content-Range, as in PostgREST",
    method: "PATCH",
    url: "books?select=count(),price.max()&author_id=eq.2",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"price":20}',
    status: 200,
    json: [{ count: 2, max: 20 }],
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "DELETE of no row: one group of none",
    method: "DELETE",
    url: "books?select=count()&id=gt.100",
    headers: { prefer: "return=representation" },
    status: 200,
    json: [{ count: 0 }],
  },
  {
    name: "an aggregate of an unknown column in a write → 400 42703, nothing written",
    method: "POST",
    url: "books?select=count(),nope.sum()",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"id":10,"title":"x"}',
    status: 400,
    json: err("42703", "column books.nope does not exist"),
  },
  {
    name: "the writes above were rolled back",
    url: "books?select=count(),price.sum()",
    status: 200,
    json: [{ count: 5, sum: 51.74 }],
  },
];

Deno.test("data API: aggregates, computed fields and relationships, spread embeds", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, LIBRARY_SQL + SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
    await t.step("postgrest-js select strings", async () => {
      const db = restClient(p, p.secretKey);
      const sums = await db.from("books").select("total:price.sum(), count()").not("author_id", "is", null);
      assertEquals([sums.error, sums.data], [null, [{ total: 46.49, count: 4 }]]);
      const groups = await db.from("books").select("author_id, rating.avg()::int").not(
        "author_id",
        "is",
        null,
      )
        .order("author_id");
      assertEquals(groups.data, [{ author_id: 1, avg: 5 }, { author_id: 2, avg: 5 }]);
      const spread = await db.from("authors").select("name, ...books(title)").eq("id", 2)
        .order("id", { referencedTable: "books" });
      assertEquals(spread.data, [{ name: "Stanisław Lem", title: ["Solaris", "The Cyberiad"] }]);
      const computed = await db.from("books").select("id, title_upper, top_review(stars)").eq(
        "title_upper",
        "BEOWULF",
      );
      assertEquals(computed.data, [{ id: 5, title_upper: "BEOWULF", top_review: null }]);
      const embedded = await db.from("authors").select("id, books(rating.max())").eq("id", 1).single();
      assertEquals(embedded.data, { id: 1, books: [{ max: 5 }] });
    });
    await t.step("the select grammar under random input: 4xx, never 5xx", async () => {
      let seed = 20261126;
      const next = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % n;
      };
      const atoms = [
        "count()",
        "price.sum()",
        "rating.avg()::int",
        "price::int.max()",
        "title",
        "*",
        "...authors(",
        "...books(",
        "books(",
        "authors!inner(",
        "genres(",
        "title_upper",
        "book_author(",
        ")",
        ",",
        "::",
        ".",
        "()",
        "x:",
        "meta->a",
        "->>",
        '"',
        "sum",
        ".min()",
        ".nope()",
        "...",
        "!",
        " ",
      ];
      for (let i = 0; i < 150; i++) {
        let select = "";
        const n = 1 + next(10);
        for (let j = 0; j < n; j++) select += atoms[next(atoms.length)];
        const res = await p.fetch(`/rest/v1/books?select=${encodeURIComponent(select)}`, {
          headers: { apikey: p.secretKey },
        });
        const body = await res.text();
        assert(res.status < 500, `select=${select} → ${res.status} ${body}`);
      }
    });
  } finally {
    await p.close();
  }
});

// A second exposed schema with its own computed field and relationship.
const SHOP_SQL = `
create schema shop;
grant usage on schema shop to anon, authenticated, service_role;
create table shop.items (id int primary key, name text not null);
create table shop.parts (id int primary key, item_id int not null, label text not null);
grant select on shop.items, shop.parts to anon, authenticated, service_role;
insert into shop.items values (1, 'kettle');
insert into shop.parts values (1, 1, 'lid'), (2, 1, 'spout');
create function shop.shout(shop.items) returns text language sql stable as $$ select upper($1.name) || '!' $$;
create function shop.item_parts(shop.items) returns setof shop.parts language sql stable as $$
  select * from shop.parts where item_id = $1.id order by id $$;
grant execute on function shop.shout(shop.items), shop.item_parts(shop.items) to anon, authenticated, service_role;
`;

Deno.test("data API: aggregates off (the default) → 400 PGRST123", async (t) => {
  const p = await startPlatform({ DATA_AGGREGATES: "false", DATA_SCHEMAS: "public,shop" });
  try {
    await ownerSql(p, LIBRARY_SQL + SHOP_SQL);
    const cases: WireCase[] = [
      { name: "of the root", url: "books?select=price.sum()", status: 400, json: NOT_ALLOWED },
      { name: "count()", url: "books?select=count()", status: 400, json: NOT_ALLOWED },
      { name: "in an embed", url: "authors?select=name,books(count())", status: 400, json: NOT_ALLOWED },
      {
        name: "in a to-many spread",
        url: "authors?select=...books(id.count())",
        status: 400,
        json: NOT_ALLOWED,
      },
      { name: "a plain read still works", url: "books?select=id&id=eq.1", status: 200, json: [{ id: 1 }] },
      {
        name: "in a write's return",
        method: "POST",
        url: "books?select=count()",
        headers: { prefer: "return=representation" },
        body: '{"id":10,"title":"x"}',
        status: 400,
        json: NOT_ALLOWED,
      },
      { name: "which wrote nothing", url: "books?select=id&id=eq.10", status: 200, json: [] },
      {
        name: "computed fields and relationships of another exposed schema",
        url: "items?select=shout,item_parts(label)",
        headers: { "accept-profile": "shop" },
        status: 200,
        json: [{ shout: "KETTLE!", item_parts: [{ label: "lid" }, { label: "spout" }] }],
      },
    ];
    for (const c of cases) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});
