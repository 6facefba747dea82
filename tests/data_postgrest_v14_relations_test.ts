// Which relationships PostgREST v14 finds and which relations are resources, row by row: an embed named by its
// foreign key's constraint or column, relationships through views (view to view, self-references, keys shown
// twice, one-to-one), partitions, functions returning a domain over a table's rows, and the PGRST200 hint when
// the only junction is in a schema that is not exposed. Each row is what PostgREST v14.17 answers (Plan.hs
// findRel, SchemaCache.hs, its spec suite at that tag).
import { ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const SQL = `
create schema rel_private;
grant usage on schema rel_private to anon, authenticated, service_role;

-- A foreign key named like the embed (and like a table it does not reference), its column named like another.
create table client (id int primary key);
create table clients (id int primary key, name text);
create table projects (id int primary key, name text, client_id int constraint client references clients);
insert into clients values (1, 'Microsoft'), (2, 'Apple');
insert into projects values (1, 'Windows', 1), (2, 'IOS', 2), (3, 'OSX', 2);
create view projects_view as select * from projects;
create table tasks (id int primary key, project_id int constraint project references projects);
insert into tasks values (1, 1);

-- Views over tables of a schema that is not exposed (PostgREST issue 2459).
create table rel_private.simple_t1 (id int primary key);
create table rel_private.simple_t2 (t1_id int references rel_private.simple_t1);
insert into rel_private.simple_t1 values (1), (2);
insert into rel_private.simple_t2 values (1);
create view simple_v1 as table rel_private.simple_t1;
create view simple_v2 as select t1_id as t1_id1, t1_id as t1_id2 from rel_private.simple_t2;
create table rel_private.composite_t1 (a int, b int, primary key (a, b));
create table rel_private.composite_t2 (t1_a int, t1_b int,
  constraint composite_fkey foreign key (t1_a, t1_b) references rel_private.composite_t1);
create view composite_v1 as table rel_private.composite_t1;
create view composite_v2 as select t1_a as t1_a1, t1_b as t1_b1, t1_a as t1_a2, t1_b as t1_b2
  from rel_private.composite_t2;
create table rel_private.self_t (id int primary key, parent int references rel_private.self_t, type text);
insert into rel_private.self_t values (1, null, 'A'), (2, 1, 'A'), (3, 2, 'A'), (4, 3, 'A');
create view self_v1 as select parent.parent as grandparent, child.parent, child.id
  from rel_private.self_t as parent join rel_private.self_t as child on child.parent = parent.id;

-- One-to-one through views: the referencing columns are the key (in another order).
create table students (id int, code text, name text, primary key (id, code));
create table students_info (id int, code text, address text, primary key (id, code),
  foreign key (code, id) references students (code, id));
insert into students values (1, '0001', 'John Doe');
insert into students_info values (1, '0001', 'Street 1');
create view students_view as select * from students;
create view students_info_view as select * from students_info;

-- A view showing a film twice (its id and the nomination's film_id), a partitioned table whose key has the
-- film: one foreign key seen from both sides is no junction, nor is a partition.
create table films (id int primary key, title text, language text);
create table nominations (id int primary key, film_id int references films, rank int);
create view nominations_view as
  select n.id, n.rank, n.film_id, f.id as fid, f.title as film_title
  from nominations n join films f on f.id = n.film_id;
create table box_office (film_id int references films, day date, gross int, primary key (film_id, day))
  partition by range (day);
create table box_office_2024 partition of box_office for values from ('2024-01-01') to ('2025-01-01');
insert into films values (1, 'Alien', 'en');
insert into nominations values (1, 1, 5);
insert into box_office values (1, '2024-05-01', 100);

-- A function returning a domain over a table's row type returns that table's rows.
create domain projects_domain as projects;
create function getproject_domain(id int) returns setof projects_domain language sql stable as
  $$ select projects::projects_domain from projects where id = $1 $$;

-- A many-to-many whose junction is in a schema that is not exposed.
create table end_1 (id int primary key);
create table end_2 (id int primary key);
create table rel_private.junction (end_1_id int references end_1, end_2_id int references end_2,
  primary key (end_1_id, end_2_id));

-- PostgREST's spec fixture for the row order its lateral joins give: products and suppliers through a junction,
-- vendors' projects (its clients' projects) and a view grouping them.
create table products (id int primary key, name text);
create table suppliers (id int primary key, name text);
create table products_suppliers (product_id int references products, supplier_id int references suppliers,
  primary key (product_id, supplier_id));
insert into products values (1, 'product-1'), (2, 'product-2'), (3, 'product-3');
insert into suppliers values (1, 'supplier-1'), (2, 'supplier-2'), (3, 'supplier-3');
insert into products_suppliers values (1, 1), (1, 2), (2, 1), (2, 3);
create table vendors (id int primary key, name text);
create table vendor_projects (id int primary key, name text, vendor_id int references vendors);
create table staff (id int primary key, name text);
create table staff_projects (staff_id int references staff, project_id int references vendor_projects,
  primary key (staff_id, project_id));
insert into vendors values (1, 'Microsoft'), (2, 'Apple');
insert into vendor_projects values (1, 'Windows 7', 1), (2, 'Windows 10', 1), (3, 'IOS', 2), (4, 'OSX', 2),
  (5, 'Orphan', null);
insert into staff values (1, 'Michael Scott'), (2, 'Dwight Schrute'), (3, 'Angela Martin');
insert into staff_projects values (1, 3), (1, 4), (2, 1), (2, 3), (3, 1), (3, 2);
create view vendor_projects_grouped as
  select vendor_id, count(id) as number_of_projects from vendor_projects group by vendor_id;
create table entities (id int primary key, name text, arr int[], text_search_vector tsvector);
create table child_entities (id int primary key, name text, parent_id int references entities);
create table grandchild_entities (id int primary key, name text, parent_id int references child_entities,
  or_starting_col text, and_starting_col text, jsonb_col jsonb);
insert into entities values (1, 'entity 1', '{1}', null), (2, 'entity 2', '{1,2}', null), (3, 'entity 3', null, null);
insert into child_entities values (1, 'child entity 1', 1), (2, 'child entity 2', 1), (3, 'child entity 3', 2),
  (4, 'child entity 4', 1), (5, 'child entity 5', 1), (6, 'child entity 6', 2);
insert into grandchild_entities (id, name, parent_id) values (1, 'grandchild entity 1', 1),
  (2, 'grandchild entity 2', 1), (3, 'grandchild entity 3', 2), (4, 'grandchild entity 4', 2),
  (5, 'grandchild entity 5', 2);
`;

const noRel = (from: string, to: string, hint: string | null = null) =>
  err(
    "PGRST200",
    `Could not find a relationship between '${from}' and '${to}' in the schema cache`,
    `Searched for a foreign key relationship between '${from}' and '${to}' in the schema 'public', but no matches were found.`,
    hint,
  );

const compositeCandidate = (columns: string) => ({
  cardinality: "many-to-one",
  embedding: "composite_v2 with composite_v1",
  relationship: `composite_fkey using composite_v2(${columns}) and composite_v1(a, b)`,
});

const CASES: WireCase[] = [
  // The target names the foreign key's constraint or its column, from a table (Plan.hs findRel).
  {
    name: "embed by the constraint's name: many-to-one",
    url: "projects?select=id,client(name)&id=in.(1,2)&order=id",
    status: 200,
    json: [{ id: 1, client: { name: "Microsoft" } }, { id: 2, client: { name: "Apple" } }],
  },
  {
    name: "embed by the constraint's name from the referenced table: one-to-many",
    url: "clients?select=id,client(id)&id=eq.2",
    status: 200,
    json: [{ id: 2, client: [{ id: 2 }, { id: 3 }] }],
  },
  {
    name: "embed by the foreign key's column",
    url: "projects?select=id,client_id(name)&id=eq.1",
    status: 200,
    json: [{ id: 1, client_id: { name: "Microsoft" } }],
  },
  {
    name: "embed by the referenced column, from the referenced table: one-to-many",
    url: "clients?select=name,id(name)&id=eq.1",
    status: 200,
    json: [{ name: "Microsoft", id: [{ name: "Windows" }] }],
  },
  {
    name: "embed by the constraint's name with !inner and a filter on it",
    url: "projects?select=id,client!inner(id)&client.id=eq.1",
    status: 200,
    json: [{ id: 1, client: { id: 1 } }],
  },
  {
    name: "a view embeds a table by the table's constraint name",
    url: "tasks?select=id,projects_view!project(id,client(name))",
    status: 200,
    json: [{ id: 1, projects_view: { id: 1, client: { name: "Microsoft" } } }],
  },
  {
    name: "a view is never embedded by the constraint's name",
    url: "tasks?select=id,project(id)",
    status: 200,
    json: [{ id: 1, project: { id: 1 } }],
  },
  // Views: one relationship per view column showing the key, chosen by a column hint.
  {
    name: "view to view by the column hint",
    url: "simple_v1?select=*,simple_v2!t1_id2(*)&order=id",
    status: 200,
    json: [{ id: 1, simple_v2: [{ t1_id1: 1, t1_id2: 1 }] }, { id: 2, simple_v2: [] }],
  },
  {
    name: "view to view by the column hint, many-to-one",
    url: "simple_v2?select=*,simple_v1!t1_id2(*)",
    status: 200,
    json: [{ t1_id1: 1, t1_id2: 1, simple_v1: { id: 1 } }],
  },
  {
    name: "a composite key shown twice: four relationships, 300 PGRST201",
    url: "composite_v2?select=*,composite_v1(*)",
    status: 300,
    json: {
      code: "PGRST201",
      details: [
        compositeCandidate("t1_a1, t1_b1"),
        compositeCandidate("t1_a1, t1_b2"),
        compositeCandidate("t1_a2, t1_b1"),
        compositeCandidate("t1_a2, t1_b2"),
      ],
      hint: `Try changing 'composite_v1' to one of the following: ${
        Array(4).fill("'composite_v1!composite_fkey'").join(", ")
      }. Find the desired relationship in the 'details' key.`,
      message:
        "Could not embed because more than one relationship was found for 'composite_v2' and 'composite_v1'",
    },
  },
  {
    name: "a self-referencing view embeds its parents by their columns",
    url: "self_v1?select=id,parent(id),grandparent(id)&id=eq.4",
    status: 200,
    json: [{ id: 4, parent: { id: 3 }, grandparent: { id: 2 } }],
  },
  {
    name: "one-to-one through views: an object",
    url: "students_view?select=name,students_info_view(address)",
    status: 200,
    json: [{ name: "John Doe", students_info_view: { address: "Street 1" } }],
  },
  // One foreign key is never both sides of a junction; partitions form none.
  {
    name: "a view showing one key twice embeds without PGRST201",
    url: "nominations_view?select=film_title,films(language)&rank=eq.5",
    status: 200,
    json: [{ film_title: "Alien", films: { language: "en" } }],
  },
  // Partitions are not resources; the partitioned table relates through its own foreign keys.
  {
    name: "a partitioned table embeds through its own foreign key",
    url: "films?select=title,box_office(gross)",
    status: 200,
    json: [{ title: "Alien", box_office: [{ gross: 100 }] }],
  },
  {
    name: "a partition: 404 PGRST205",
    url: "box_office_2024",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.box_office_2024' in the schema cache"),
  },
  {
    name: "embedding a partition: 400 PGRST200",
    url: "films?select=title,box_office_2024(gross)",
    status: 400,
    json: noRel("films", "box_office_2024", "Perhaps you meant 'box_office' instead of 'box_office_2024'."),
  },
  // A function returning a domain over a table's rows embeds through the table's foreign keys.
  {
    name: "embed from a function returning a domain over a table type",
    method: "POST",
    url: "rpc/getproject_domain?select=id,name,client:clients(id),tasks(id)",
    body: '{"id": 1}',
    status: 200,
    json: [{ id: 1, name: "Windows", client: { id: 1 }, tasks: [{ id: 1 }] }],
  },
  // Row order as PostgREST's INNER and LEFT JOIN LATERAL give it (its EmbedInnerJoinSpec, QuerySpec): an `!inner`
  // embed is a join, not a condition that rows exist, and a to-one embed one the planner may join by hash.
  {
    name: "order: a many-to-many !inner embed",
    url: "products?select=id,suppliers!inner(id)",
    status: 200,
    json: [{ id: 1, suppliers: [{ id: 1 }, { id: 2 }] }, { id: 2, suppliers: [{ id: 1 }, { id: 3 }] }],
  },
  {
    name: "order: many-to-one and many-to-many !inner embeds",
    url: "vendor_projects?select=name,vendors!inner(name),staff!inner(name)",
    status: 200,
    json: [
      {
        name: "Windows 7",
        vendors: { name: "Microsoft" },
        staff: [{ name: "Dwight Schrute" }, { name: "Angela Martin" }],
      },
      { name: "Windows 10", vendors: { name: "Microsoft" }, staff: [{ name: "Angela Martin" }] },
      {
        name: "IOS",
        vendors: { name: "Apple" },
        staff: [{ name: "Michael Scott" }, { name: "Dwight Schrute" }],
      },
      { name: "OSX", vendors: { name: "Apple" }, staff: [{ name: "Michael Scott" }] },
    ],
  },
  {
    name: "order: ties of a view with GROUP BY beside a to-one embed",
    url: "vendor_projects_grouped?select=number_of_projects,vendor:vendors(name)&order=number_of_projects",
    status: 200,
    json: [
      { number_of_projects: 1, vendor: null },
      { number_of_projects: 2, vendor: { name: "Microsoft" } },
      { number_of_projects: 2, vendor: { name: "Apple" } },
    ],
  },
  {
    name: "an !inner embed's count asks that a row exists, whatever the embed's range",
    url: "products?select=id,suppliers!inner(id)&suppliers.limit=0",
    headers: { prefer: "count=exact" },
    // No row has one of no suppliers; the count (an EXISTS, as PostgREST's) finds two: a short page.
    status: 206,
    json: [],
    expect: { "content-range": "*/2" },
  },
  {
    // PostgREST's EXISTS for `not.is.null` (a semi join the planner estimates as the table's rows, never analyzed
    // here), not a negated NOT EXISTS (a filter it estimates at half of them).
    name: "count=planned of an embed that is not null estimates the semi join",
    url: "vendor_projects?select=name,vendors(name)&vendors=not.is.null&order=id",
    headers: { prefer: "count=planned" },
    status: 206,
    json: [
      { name: "Windows 7", vendors: { name: "Microsoft" } },
      { name: "Windows 10", vendors: { name: "Microsoft" } },
      { name: "IOS", vendors: { name: "Apple" } },
      { name: "OSX", vendors: { name: "Apple" } },
    ],
    expect: { "content-range": "0-3/1200" },
  },
  {
    // PostgREST filters an embed's rows by its nested embed's lateral row: its rows keep their scan order.
    name: "order: an embed filtered by its own embed that is not null",
    url: "entities?select=name,child_entities(name,grandchild_entities())" +
      "&child_entities.grandchild_entities=not.is.null&child_entities=not.is.null",
    status: 200,
    json: [{ name: "entity 1", child_entities: [{ name: "child entity 1" }, { name: "child entity 2" }] }],
  },
  // A junction of a schema that is not exposed: no relationship, and no "Perhaps you meant" (Error.hs
  // noRelBetweenHint: the table still has relationships, none of them kept).
  {
    name: "many-to-many through a junction that is not exposed: PGRST200 without a hint",
    url: "end_1?select=end_2(*)",
    status: 400,
    json: noRel("end_1", "end_2"),
  },
];

Deno.test("/rest/v1 finds relationships as PostgREST v14", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    for (const c of CASES) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});
