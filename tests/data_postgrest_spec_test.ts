// Cases ported from PostgREST's own spec suite (test/spec/Feature/…, PostgREST v14), row by row: the request and
// the status, body and headers the spec expects, on a fixture of the spec's own tables (test/spec/fixtures/
// schema.sql and data.sql, the parts these cases read), created by the project owner. The spec's schema is
// `test`; ours is `public`, so its messages read `public.` where the spec's read `test.`. The spec's
// `Content-Length` checks are kept as `bytes` (the body's length).
import { ownerSql } from "./data_fixture.ts";
import { startPlatform } from "./harness.ts";
import { err, runWireCase, type WireCase } from "./data_wire_cases.ts";

const JSON_TYPE = "application/json; charset=utf-8";
const ids = (...list: number[]) => list.map((id) => ({ id }));

const SQL = `
create table items (id bigserial primary key);
insert into items select generate_series(1, 15);
create table items2 (id bigserial primary key);
insert into items2 values (1);
create function always_true(items) returns boolean language sql immutable as $$ select true $$;
create function computed_overload(items) returns boolean language sql immutable as $$ select true $$;
create function computed_overload(items2) returns boolean language sql immutable as $$ select true $$;
create function is_first(items) returns boolean language sql immutable as $$ select $1.id = 1 $$;
create function anti_id(items) returns bigint language sql immutable as $$ select $1.id * -1 $$;
create function search(id bigint) returns setof items language plpgsql stable as
  $$ begin return query select * from items where items.id = search.id; end $$;
create table simple_pk (k varchar primary key, extra varchar not null);
insert into simple_pk values ('xyyx', 'u'), ('xYYx', 'v');
create table no_pk (a varchar, b varchar);
insert into no_pk values (null, null), ('1', '0'), ('2', '0');
create table nullable_integer (a integer);
insert into nullable_integer values (null);
create table chores (id int primary key, name text, done bool);
insert into chores values (1, 'take out the garbage', true), (2, 'do the laundry', false), (3, 'wash the dishes', null);
create table complex_items (
  id bigint not null, name text, settings json, arr_data integer[], "field-with_sep" integer default 1 not null
);
insert into complex_items values
  (1, 'One', '{"foo":{"int":1,"bar":"baz"}}', '{1}', default),
  (2, 'Two', '{"foo":{"int":1,"bar":"baz"}}', '{1,2}', default),
  (3, 'Three', '{"foo":{"int":1,"bar":"baz"}}', '{1,2,3}', 3);
create table clients (id integer primary key, name text not null);
insert into clients values (1, 'Microsoft'), (2, 'Apple');
create table projects (id integer primary key, name text not null, client_id integer references clients (id));
alter table projects rename constraint projects_client_id_fkey to client;
insert into projects values (1, 'Windows 7', 1), (2, 'Windows 10', 1), (3, 'IOS', 2), (4, 'OSX', 2), (5, 'Orphan', null);
create table users (id integer primary key, name text not null);
insert into users values (1, 'Angela Martin'), (2, 'Michael Scott'), (3, 'Dwight Schrute');
create table tasks (id integer primary key, name text not null, project_id integer references projects (id));
alter table tasks rename constraint tasks_project_id_fkey to project;
insert into tasks values (1, 'Design w7', 1), (2, 'Code w7', 1), (3, 'Design w10', 2), (4, 'Code w10', 2),
  (5, 'Design IOS', 3), (6, 'Code IOS', 3), (7, 'Design OSX', 4), (8, 'Code OSX', 4);
create table users_tasks (
  user_id integer not null references users (id), task_id integer not null references tasks (id),
  primary key (task_id, user_id)
);
insert into users_tasks values (1, 1), (1, 2), (1, 3), (1, 4), (2, 5), (2, 6), (2, 7), (3, 1), (3, 5);
create table "Server Today" ("cHostname" text, "Just A Server Model" text);
insert into "Server Today" values ('argnim1    ', ' IBM,9113-550 (P5-550)'), ('argnim2    ', ' IBM,9113-550 (P5-550)'),
  ('daaa2nim71 ', ' IBM,9131-52A (P5-52A)'), ('daah3nim71 ', ' IBM,8406-71Y (P7-PS701)'),
  ('hbnim1     ', ' IBM,9133-55A (P5-55A)');
create table pgrst_reserved_chars (
  "*id*" integer, ":arr->ow::cast" text, "(inside,parens)" text, "a.dotted.column" text, "  col  w  space  " text
);
insert into pgrst_reserved_chars values (1, ' arrow-1 ', ' parens-1 ', ' dotted-1 ', ' space-1'),
  (2, ' arrow-2 ', ' parens-2 ', ' dotted-2 ', ' space-2'), (3, ' arrow-3 ', ' parens-3 ', ' dotted-3 ', ' space-3');
create table do$llar$s (a$num$ numeric);
insert into do$llar$s (a$num$) values (100), (200), (300);
create table timestamps (t timestamp with time zone);
insert into timestamps values ('2023-10-18 12:37:59.611000+0000'), ('2023-10-18 14:37:59.611000+0000'),
  ('2023-10-18 16:37:59.611000+0000');
create table موارد (هویت bigint not null);
create table w_or_wo_comma_names (name text);
insert into w_or_wo_comma_names values ('Hebdon, John'), ('Williams, Mary'), ('Smith, Joseph'), ('David White'),
  ('Larry Thompson'), ('Double O Seven(007)'), ('"'), ('Double"Quote"McGraw"'), ('\\'), ('/\\Slash/\\Beast/\\');
create table items_with_different_col_types (
  int_data integer, text_data text, bool_data bool, bin_data bytea, char_data character varying, date_data date,
  real_data real, time_data time
);
insert into items_with_different_col_types values (1, null, null, null, null, null, null, null);
create table "Escap3e;" ("so6meIdColumn" integer primary key);
create table "ghostBusters" ("escapeId" integer not null references "Escap3e;" ("so6meIdColumn"));
insert into "Escap3e;" values (1), (2), (3), (4), (5);
insert into "ghostBusters" values (1), (3), (5);
create table entities (id integer primary key, name text, arr integer[], text_search_vector tsvector);
create table child_entities (id integer primary key, name text, parent_id integer references entities (id));
create table grandchild_entities (
  id integer primary key, name text, parent_id integer references child_entities (id), or_starting_col text,
  and_starting_col text, jsonb_col jsonb
);
insert into entities values (1, 'entity 1', '{1}', '''bar'':2 ''foo'':1'), (2, 'entity 2', '{1,2}', '''baz'':1 ''qux'':2'),
  (3, 'entity 3', '{1,2,3}', null), (4, null, null, null);
insert into child_entities values (1, 'child entity 1', 1), (2, 'child entity 2', 1), (3, 'child entity 3', 2),
  (4, 'child entity 4', 1), (5, 'child entity 5', 1), (6, 'child entity 6', 2);
insert into grandchild_entities values (1, 'grandchild entity 1', 1, null, null, null),
  (2, 'grandchild entity 2', 1, null, null, null), (3, 'grandchild entity 3', 2, null, null, null),
  (4, '(grandchild,entity,4)', 2, null, null, '{"a": {"b":"foo"}}'), (5, '(grandchild,entity,5)', 2, null, null, '{"b":"bar"}');
create table json_arr (id integer primary key, data json);
insert into json_arr values (1, '[1, 2, 3]'), (2, '[4, 5, 6]'), (3, '[[9, 8, 7], [11, 12, 13]]'), (4, '[[[5, 6], 7, 8]]'),
  (5, '[{"a": "A"}, {"b": "B"}]'), (6, '[{"a": [1,2,3]}, {"b": [4,5]}]'), (7, '{"c": [1,2,3], "d": [4,5]}'),
  (8, '{"c": [{"d": [4,5,6,7,8]}]}'), (9, '[{"0xy1": [1,{"23-xy-45": [2, {"xy-6": [3]}]}]}]'),
  (10, '{"!@#$%^&*_a": [{"!@#$%^&*_b": 1}, {"!@#$%^&*_c": [2]}], "!@#$%^&*_d": {"!@#$%^&*_e": 3}}');
create type enum_menagerie_type as enum ('foo', 'bar');
create table project_invoices (id int primary key, invoice_total numeric, project_id integer references projects (id));
insert into project_invoices values (1, 100, 1), (2, 200, 1), (3, 500, 2), (4, 700, 2), (5, 1200, 3), (6, 2000, 3),
  (7, 100, 4), (8, 4000, 4);
create table menagerie (
  "integer" integer primary key, double double precision not null, "varchar" character varying not null,
  "boolean" boolean not null, date date not null, money money not null, enum enum_menagerie_type not null
);
create table auto_incrementing_pk (
  id serial primary key, nullable_string character varying, non_nullable_string character varying not null,
  inserted_at timestamp with time zone default now()
);
alter sequence auto_incrementing_pk_id_seq restart with 2;
create table compound_pk (k1 integer not null, k2 text not null, extra integer, primary key (k1, k2));
create view compound_pk_view as select * from compound_pk;
create table with_pk1 (pk1 int primary key);
create table with_pk2 (pk2 int primary key);
create view with_multiple_pks as select * from with_pk1, with_pk2;
create function with_multiple_pks_insert() returns trigger language plpgsql as $$ begin
  insert into with_pk1 values (new.pk1) on conflict do nothing;
  insert into with_pk2 values (new.pk2) on conflict do nothing;
  return new;
end $$;
create trigger ins instead of insert on with_multiple_pks for each row execute procedure with_multiple_pks_insert();
create view clients_view as select * from clients;
create view projects_view as select projects.id, projects.name, projects.client_id from projects;
create view projects_view_alt as select projects.id as t_id, projects.name, projects.client_id as t_client_id
  from projects;
create view projects_auto_updatable_view_with_pk as select id, name, client_id from projects;
create view projects_auto_updatable_view_without_pk as select name, client_id from projects;
create view projects_view_with_all_triggers_with_pk as select distinct id, name, client_id from projects;
create view projects_view_without_triggers as select distinct id, name, client_id from projects;
create function test_for_views_with_triggers() returns trigger language plpgsql as $$ begin return null; end $$;
create trigger i instead of insert on projects_view_with_all_triggers_with_pk
  for each row execute procedure test_for_views_with_triggers();
create trigger u instead of update on projects_view_with_all_triggers_with_pk
  for each row execute procedure test_for_views_with_triggers();
create trigger d instead of delete on projects_view_with_all_triggers_with_pk
  for each row execute procedure test_for_views_with_triggers();
create view projects_view_with_all_triggers_without_pk as select distinct name, client_id from projects;
create trigger i instead of insert on projects_view_with_all_triggers_without_pk
  for each row execute procedure test_for_views_with_triggers();
create trigger u instead of update on projects_view_with_all_triggers_without_pk
  for each row execute procedure test_for_views_with_triggers();
create trigger d instead of delete on projects_view_with_all_triggers_without_pk
  for each row execute procedure test_for_views_with_triggers();
create view projects_view_with_insert_trigger as select distinct id, name, client_id from projects;
create trigger i instead of insert on projects_view_with_insert_trigger
  for each row execute procedure test_for_views_with_triggers();
create view projects_view_with_update_trigger as select distinct id, name, client_id from projects;
create trigger u instead of update on projects_view_with_update_trigger
  for each row execute procedure test_for_views_with_triggers();
create view projects_view_with_delete_trigger as select distinct id, name, client_id from projects;
create trigger d instead of delete on projects_view_with_delete_trigger
  for each row execute procedure test_for_views_with_triggers();
create function getallusers() returns setof users language sql stable as $$ select * from users $$;
create table tsearch (text_search_vector tsvector);
insert into tsearch values (to_tsvector('english', 'It''s kind of fun to do the impossible')),
  (to_tsvector('english', 'But also fun to do what is possible')), (to_tsvector('english', 'Fat cats ate rats')),
  (to_tsvector('french', 'C''est un peu amusant de faire l''impossible')),
  (to_tsvector('german', 'Es ist eine Art Spaß, das Unmögliche zu machen'));
create table big_projects (big_project_id serial primary key, name text);
create table sites (site_id serial primary key, name text, main_project_id int null references big_projects (big_project_id));
alter table sites rename constraint sites_main_project_id_fkey to main_project;
create table jobs (
  job_id uuid, name text, site_id int not null references sites (site_id),
  big_project_id int not null references big_projects (big_project_id), primary key (job_id, site_id, big_project_id)
);
create table agents (id int primary key, name text, department_id int);
create table departments (id int primary key, name text, head_id int references agents (id));
create view main_jobs as select * from jobs where site_id in (select site_id from sites where main_project_id is not null);
alter table agents add constraint agents_department_id_fkey foreign key (department_id) references departments (id);
create table second (id int primary key, name text);
create table first (
  id int primary key, name text, second_id_1 int references second unique, second_id_2 int references second unique
);
create table employees (
  first_name text, last_name text, salary money, company text, occupation text, primary key (first_name, last_name)
);
insert into employees values ('Frances M.', 'Roe', '24000', 'One-Up Realty', 'Author'),
  ('Daniel B.', 'Lyon', '36000', 'Dubrow''s Cafeteria', 'Packer'),
  ('Edwin S.', 'Smith', '48000', 'Pro Garden Management', 'Marine biologist');
create table tiobe_pls (name text primary key, rank smallint);
insert into tiobe_pls values ('Java', 1), ('C', 2), ('Python', 4);
create table organizations (
  id integer primary key, name text, referee integer references organizations (id),
  auditor integer references organizations (id), manager_id integer
);
insert into organizations values (1, 'Referee Org', null, null, 1), (2, 'Auditor Org', null, null, 2),
  (3, 'Acme', 1, 2, 3), (4, 'Umbrella', 1, 2, 4), (5, 'Cyberdyne', 3, 4, 5), (6, 'Oscorp', 3, 4, 6);
create table articles (id integer primary key, body text, owner name not null default current_user);
insert into articles values (1, 'No… It''s a thing; it''s like a plan, but with more greatness.', 'diogo'),
  (2, 'Stop talking, brain thinking. Hush.', 'diogo'), (3, 'It''s a fez. I wear a fez now. Fezes are cool.', 'diogo');
create table "withUnique" (uni text unique, extra text);
insert into "withUnique" values ('nodup', 'blah');
create table foo (
  a text,
  b text generated always as (case when a = 'telegram' then 'im' when a = 'proton' then 'email'
    when a = 'infinity' then 'idea' else 'bad idea' end) stored
);
create table addresses (id int not null unique, address text not null);
insert into addresses values (1, 'address 1'), (2, 'address 2'), (3, 'address 3'), (4, 'address 4');
create view bad_subquery as select * from projects where id = (select id from projects);
create view infinite_recursion as select * from projects;
create or replace view infinite_recursion as select * from infinite_recursion;

create function getproject(id int) returns setof projects language sql as $$ select * from projects where id = $1 $$;
create function getallprojects() returns setof projects language sql as $$ select * from projects $$ rows 2019;
create function get_projects_above(id int) returns setof projects language sql as
  $$ select * from projects where id > $1 $$ rows 1;
create view getallprojects_view as select * from getallprojects();
create view get_projects_above_view as select * from get_projects_above(1);
create function setprojects(id_l int, id_h int, name text) returns setof projects language sql as
  $$ update projects set name = $3 where id >= $1 and id <= $2 returning * $$;
create function getitemrange(min bigint, max bigint) returns setof items language sql stable as
  $$ select * from items where id > $1 and id <= $2 $$;
create function sayhello(name text) returns text language sql immutable as $$ select 'Hello, ' || $1 $$;
create function add_them(a integer, b integer) returns integer language sql as $$ select a + b $$;
create function raise_pt402() returns void language plpgsql as $$ begin
  raise sqlstate 'PT402' using message = 'Payment Required', detail = 'Quota exceeded', hint = 'Upgrade your plan';
end $$;
create function raise_bad_pt() returns void language plpgsql as $$ begin
  raise sqlstate 'PT40A' using message = 'Wrong';
end $$;
create function raise_sqlstate_test1() returns void language plpgsql as $$ begin
  raise sqlstate 'PGRST' using
    message = '{"code":"123","message":"ABC","details":"DEF","hint":"XYZ"}',
    detail = '{"status":332,"status_text":"My Custom Status","headers":{"X-Header":"str"}}';
end $$;
create function overloaded() returns setof int language sql as $$ values (1), (2), (3) $$;
create function overloaded(json) returns table(x int, y text) language sql as
  $$ select * from json_to_recordset($1) as r(x int, y text) $$;
create function overloaded(a int, b int) returns int language sql as $$ select a + b $$;
create function overloaded(a text, b text, c text) returns text language sql as $$ select a || b || c $$;
create function overloaded_same_args(arg integer) returns json language sql as
  $$ select json_build_object('type', pg_typeof(arg), 'value', arg) $$;
create function overloaded_same_args(arg xml) returns json language sql as
  $$ select json_build_object('type', pg_typeof(arg), 'value', arg) $$;
create function overloaded_same_args(arg text, num integer default 0) returns json language sql as
  $$ select json_build_object('type', pg_typeof(arg), 'value', arg) $$;
create function named_json_param(data json) returns json language sql as $$ select data $$;
create function unnamed_int_param(int) returns int language sql as $$ select $1 $$;
create function single_out_param(num int, out num_plus_one int) language sql as $$ select num + 1 $$;
create function single_json_out_param(a int, b text, out my_json json) language sql as
  $$ select json_build_object('a', a, 'b', b) $$;
create function many_out_params(out my_json json, out num int, out str text) language sql as
  $$ select '{"a": 1, "b": "two"}'::json, 3, 'four'::text $$;
create function single_inout_param(inout num int) language sql as $$ select num + 1 $$;
create function many_inout_params(inout num int, inout str text, inout b bool default true) language sql as
  $$ select num, str, b $$;
create function single_column_table_return() returns table (a text) language sql as $$ select 'A'::text $$;
create function multi_column_table_return() returns table (a text, b text) language sql as
  $$ select 'A'::text, 'B'::text $$;
create function overloaded_unnamed_param(json) returns json language sql as $$ select $1 $$;
create function overloaded_unnamed_param() returns int language sql as $$ select 1 $$;
create function overloaded_unnamed_param(x int, y int) returns int language sql as $$ select x + y $$;
create function delete_items_returns_setof() returns setof items language sql as
  $$ delete from items where id <= 15 returning * $$;
create function delete_items_returns_table() returns table(id bigint) language sql as
  $$ delete from items where id <= 15 returning * $$;
create function delete_items_returns_void() returns void language sql as $$ delete from items $$;
create function overloaded_unnamed_json_jsonb_param(json) returns json language sql as $$ select $1 $$;
create function overloaded_unnamed_json_jsonb_param(jsonb) returns jsonb language sql as $$ select $1 $$;
create function overloaded_unnamed_json_jsonb_param(x int, y int) returns int language sql as $$ select x + y $$;
create function bad_guc_headers_1() returns void language sql as
  $$ set local "response.headers" = '{"X-Test": "invalid structure for headers"}' $$;
create function bad_guc_headers_2() returns void language sql as
  $$ set local "response.headers" = '["invalid", "structure", "for", "headers"]' $$;
create function bad_guc_headers_3() returns void language sql as
  $$ set local "response.headers" = '{"X-Test": "invalid", "X-Test-2": "structure", "X-Test-3": "for headers"}' $$;
create function send_bad_status() returns json language plpgsql as $$ begin
  perform set_config('response.status', 'bad', true);
  return null;
end $$;
-- PostgREST's suite runs VACUUM ANALYZE after loading its fixtures: planned counts are the planner's estimates.
analyze;
`;

const singular = { accept: "application/vnd.pgrst.object+json" };
const coerce = (rows: number) =>
  err("PGRST116", "Cannot coerce the result to a single JSON object", `The result contains ${rows} rows`);

/** test/spec/Feature/Query/ErrorSpec.hs */
const ERROR_SPEC: WireCase[] = [
  { name: "cardinality_violation is 500", url: "bad_subquery", status: 500 },
  {
    name: "an invalid nested path: 404 PGRST125 with Proxy-Status",
    url: "invalid/nested/paths",
    status: 404,
    json: err("PGRST125", "Invalid path specified in request URL"),
    expect: { "proxy-status": "PostgREST; error=PGRST125" },
    bytes: 96,
  },
  {
    name: "a schema cache error: 404 PGRST205 with Proxy-Status",
    url: "non_existent_table",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.non_existent_table' in the schema cache"),
    expect: { "proxy-status": "PostgREST; error=PGRST205" },
  },
  {
    name: "a JWT error: 401 PGRST301 with Proxy-Status",
    url: "items",
    anon: true,
    headers: {
      authorization:
        "Bearer ey9zdGdyZXN0X3Rlc3RfYXV0aG9yIiwiaWQiOiJqZG9lIn0.y4vZuu1dDdwAl0-S00MCRWRYMlJ5YAMSir6Es6WtWx0",
    },
    status: 401,
    json: err("PGRST301", "Expected 3 parts in JWT; got 2"),
    expect: { "proxy-status": "PostgREST; error=PGRST301" },
    bytes: 89,
  },
  {
    name: "raise sqlstate PT402: 402 with Proxy-Status",
    url: "rpc/raise_pt402",
    status: 402,
    json: err("PT402", "Payment Required", "Quota exceeded", "Upgrade your plan"),
    expect: { "proxy-status": "PostgREST; error=PT402" },
    bytes: 99,
  },
  {
    name: "raise sqlstate PGRST: its status and code, Proxy-Status",
    url: "rpc/raise_sqlstate_test1",
    status: 332,
    json: err("123", "ABC", "DEF", "XYZ"),
    expect: { "proxy-status": "PostgREST; error=123", "x-header": "str" },
    bytes: 59,
  },
  {
    name: "PGRST205 hints a table at least 75% similar (projectx)",
    url: "projectx",
    status: 404,
    json: err(
      "PGRST205",
      "Could not find the table 'public.projectx' in the schema cache",
      null,
      "Perhaps you meant the table 'public.projects'",
    ),
  },
  {
    name: "PGRST205 hints a table at least 75% similar (projecxx)",
    url: "projecxx",
    status: 404,
    json: err(
      "PGRST205",
      "Could not find the table 'public.projecxx' in the schema cache",
      null,
      "Perhaps you meant the table 'public.projects'",
    ),
  },
  {
    name: "PGRST205 without a hint below 75% similarity",
    url: "projxxxx",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.projxxxx' in the schema cache"),
  },
  {
    name: "a partial token",
    url: "items",
    anon: true,
    headers: { authorization: "Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.bm90IGFuIG9iamVjdA" },
    status: 401,
    json: err("PGRST301", "Expected 3 parts in JWT; got 2"),
  },
  {
    name: "a complete token of random characters",
    url: "items",
    anon: true,
    headers: { authorization: "Bearer quifquirndsjagnrgniur.fonvoienqhhdj.iuqvnvhojah" },
    status: 401,
    json: err("PGRST301", "JWT cryptographic operation failed"),
  },
  {
    name: "a token with algorithm none",
    url: "items",
    anon: true,
    headers: {
      authorization:
        "Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.e30.yOBhlOIqn56T-4NvyEXCjfi3UmyQZ-BzXtePMO2NgRI",
    },
    status: 401,
    json: err(
      "PGRST301",
      "Wrong or unsupported encoding algorithm",
      "JWT is unsecured but expected 'alg' was not 'none'",
    ),
  },
];

/** test/spec/Feature/Query/QuerySpec.hs */
const QUERY_SPEC: WireCase[] = [
  {
    // v14: an aliased embed is found by its relation's name too, with no warning (v16 added one).
    name: "filters, orders and limits aliased embeded entities using the target name",
    url:
      "projects?id=eq.1&select=id, name, the_tasks:tasks(id, name)&tasks.name=like.Code*&tasks.order=name.asc&tasks.limit=1",
    status: 200,
    json: [{ id: 1, name: "Windows 7", the_tasks: [{ id: 2, name: "Code w7" }] }],
    expect: { warning: null },
  },
  {
    // Not in the spec: two aliased embeds, one alias outside Latin-1, each named by its relation.
    name: "aliased embeds named by their relations, no warning",
    url:
      "projects?id=eq.1&select=id,タスク:tasks(id),c:clients(id)&tasks.order=id.desc&tasks.limit=1&clients.id=eq.1",
    status: 200,
    json: [{ id: 1, "タスク": [{ id: 2 }], c: { id: 1 } }],
    expect: { warning: null },
  },
  {
    name: "a nonexistent table: 404",
    url: "faketable",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.faketable' in the schema cache"),
  },
  {
    name: "eq",
    url: "items?id=eq.5",
    status: 200,
    json: ids(5),
    expect: { "content-range": "0-0/*" },
    bytes: 10,
  },
  {
    name: "not.eq",
    url: "items?id=not.eq.5&order=id",
    status: 200,
    json: ids(1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    expect: { "content-range": "0-13/*" },
  },
  { name: "two conditions with not", url: "simple_pk?k=like.*yx&extra=not.eq.u", status: 200, json: [] },
  { name: "not.lt", url: "items?id=not.lt.14&order=id.asc", status: 200, json: ids(14, 15) },
  { name: "not.gt", url: "items?id=not.gt.2&order=id.asc", status: 200, json: ids(1, 2) },
  {
    name: "in",
    url: "items?id=in.(1,3,5)",
    status: 200,
    json: ids(1, 3, 5),
    expect: { "content-range": "0-2/*" },
  },
  { name: "not.in", url: "items?id=not.in.(2,4,6,7,8,9,10,11,12,13,14,15)", status: 200, json: ids(1, 3, 5) },
  {
    name: "not.is.null",
    url: "no_pk?a=not.is.null",
    status: 200,
    json: [{ a: "1", b: "0" }, { a: "2", b: "0" }],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "is.not_null",
    url: "no_pk?a=is.not_null",
    status: 200,
    json: [{ a: "1", b: "0" }, { a: "2", b: "0" }],
  },
  { name: "is.null", url: "no_pk?a=is.null", status: 200, json: [{ a: null, b: null }] },
  { name: "not.is.not_null", url: "no_pk?a=not.is.not_null", status: 200, json: [{ a: null, b: null }] },
  { name: "is.null on an integer", url: "nullable_integer?a=is.null", status: 200, json: [{ a: null }] },
  {
    name: "is.true",
    url: "chores?done=is.true",
    status: 200,
    json: [{ id: 1, name: "take out the garbage", done: true }],
  },
  {
    name: "is.false",
    url: "chores?done=is.false",
    status: 200,
    json: [{ id: 2, name: "do the laundry", done: false }],
  },
  {
    name: "is.unknown",
    url: "chores?done=is.unknown",
    status: 200,
    json: [{ id: 3, name: "wash the dishes", done: null }],
  },
  {
    name: "is.NULL",
    url: "chores?done=is.NULL",
    status: 200,
    json: [{ id: 3, name: "wash the dishes", done: null }],
  },
  {
    name: "is.NoT_NuLl",
    url: "chores?done=is.NoT_NuLl",
    status: 200,
    json: [{ id: 1, name: "take out the garbage", done: true }, {
      id: 2,
      name: "do the laundry",
      done: false,
    }],
  },
  {
    name: "is.TRUE",
    url: "chores?done=is.TRUE",
    status: 200,
    json: [{ id: 1, name: "take out the garbage", done: true }],
  },
  {
    name: "is.FAlSe",
    url: "chores?done=is.FAlSe",
    status: 200,
    json: [{ id: 2, name: "do the laundry", done: false }],
  },
  {
    name: "is.UnKnOwN",
    url: "chores?done=is.UnKnOwN",
    status: 200,
    json: [{ id: 3, name: "wash the dishes", done: null }],
  },
  { name: "is.nil is 400", url: "chores?done=is.nil", status: 400 },
  { name: "is.ok is 400", url: "chores?done=is.ok", status: 400 },
  { name: "like *yx", url: "simple_pk?k=like.*yx", status: 200, json: [{ k: "xyyx", extra: "u" }] },
  { name: "like xy*", url: "simple_pk?k=like.xy*", status: 200, json: [{ k: "xyyx", extra: "u" }] },
  { name: "like *YY*", url: "simple_pk?k=like.*YY*", status: 200, json: [{ k: "xYYx", extra: "v" }] },
  { name: "not.like", url: "simple_pk?k=not.like.*yx", status: 200, json: [{ k: "xYYx", extra: "v" }] },
  {
    name: "ilike",
    url: "simple_pk?k=ilike.xy*&order=extra.asc",
    status: 200,
    json: [{ k: "xyyx", extra: "u" }, { k: "xYYx", extra: "v" }],
  },
  { name: "not.ilike", url: "simple_pk?k=not.ilike.xy*&order=extra.asc", status: 200, json: [] },
  { name: "match yx$", url: "simple_pk?k=match.yx$", status: 200, json: [{ k: "xyyx", extra: "u" }] },
  { name: "match ^xy", url: "simple_pk?k=match.^xy", status: 200, json: [{ k: "xyyx", extra: "u" }] },
  { name: "not.match", url: "simple_pk?k=not.match.yx$", status: 200, json: [{ k: "xYYx", extra: "v" }] },
  {
    name: "imatch ..*YY.*",
    url: "simple_pk?k=imatch..*YY.*&order=extra.asc",
    status: 200,
    json: [{ k: "xyyx", extra: "u" }, { k: "xYYx", extra: "v" }],
  },
  { name: "not.imatch", url: "simple_pk?k=not.imatch.^xy&order=extra.asc", status: 200, json: [] },
  {
    name: "a filter on a computed column",
    url: "items?always_true=eq.true&order=id.asc",
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "order by a computed column",
    url: "items?order=anti_id.desc",
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
  },
  {
    name: "a computed column on a table",
    url: "items?id=eq.1&select=id,always_true",
    status: 200,
    json: [{ id: 1, always_true: true }],
  },
  {
    name: "a computed column on a function's rows",
    url: "rpc/search?id=1&select=id,always_true",
    status: 200,
    json: [{ id: 1, always_true: true }],
  },
  {
    name: "an overloaded computed column (items)",
    url: "items?id=eq.1&select=id,computed_overload",
    status: 200,
    json: [{ id: 1, computed_overload: true }],
  },
  {
    name: "an overloaded computed column (items2)",
    url: "items2?id=eq.1&select=id,computed_overload",
    status: 200,
    json: [{ id: 1, computed_overload: true }],
  },
  {
    name: "an overloaded computed column on a function's rows",
    url: "rpc/search?id=1&select=id,computed_overload",
    status: 200,
    json: [{ id: 1, computed_overload: true }],
  },
  {
    name: "a filter on a nested embed",
    url: "clients?select=id,projects(id,tasks(id,name))&projects.tasks.name=like.Design*",
    status: 200,
    json: [
      {
        id: 1,
        projects: [{ id: 1, tasks: [{ id: 1, name: "Design w7" }] }, {
          id: 2,
          tasks: [{ id: 3, name: "Design w10" }],
        }],
      },
      {
        id: 2,
        projects: [{ id: 3, tasks: [{ id: 5, name: "Design IOS" }] }, {
          id: 4,
          tasks: [{ id: 7, name: "Design OSX" }],
        }],
      },
    ],
  },
  {
    name: "a filter on an embed that does not exist: PGRST108",
    url: "clients?select=*&non_existent_projects.name=like.*NonExistent*",
    status: 400,
    json: err(
      "PGRST108",
      "'non_existent_projects' is not an embedded resource in this request",
      null,
      "Verify that 'non_existent_projects' is included in the 'select' query parameter.",
    ),
    expect: { "content-type": JSON_TYPE },
    bytes: 204,
  },
  {
    name: "a filter on a misspelt alias: PGRST108",
    url: "clients?select=*,amiga_projects:projects(*)&amiga_projectsss.name=ilike.*Amiga*",
    status: 400,
    json: err(
      "PGRST108",
      "'amiga_projectsss' is not an embedded resource in this request",
      null,
      "Verify that 'amiga_projectsss' is included in the 'select' query parameter.",
    ),
  },
  {
    name: "a filter on a missing nested embed: PGRST108",
    url: "clients?select=id,projects(id,tasks(id,name))&projects.tasks2.name=like.Design*",
    status: 400,
    json: err(
      "PGRST108",
      "'tasks2' is not an embedded resource in this request",
      null,
      "Verify that 'tasks2' is included in the 'select' query parameter.",
    ),
  },
  { name: "cs", url: "complex_items?select=id&arr_data=cs.{2}", status: 200, json: ids(2, 3) },
  { name: "cd", url: "complex_items?select=id&arr_data=cd.{1,2,4}", status: 200, json: ids(1, 2) },
  { name: "isdistinct", url: "no_pk?select=a&a=isdistinct.2", status: 200, json: [{ a: null }, { a: "1" }] },
  { name: "not.isdistinct", url: "no_pk?select=a&a=not.isdistinct.2", status: 200, json: [{ a: "2" }] },
  {
    name: "select * by default",
    url: "complex_items?id=eq.3",
    status: 200,
    json: [{
      id: 3,
      name: "Three",
      settings: { foo: { int: 1, bar: "baz" } },
      arr_data: [1, 2, 3],
      "field-with_sep": 3,
    }],
  },
  {
    name: "a dash in a column name",
    url: "complex_items?id=eq.3&select=id,field-with_sep",
    status: 200,
    json: [{ id: 3, "field-with_sep": 3 }],
  },
  { name: "rename", url: "complex_items?id=eq.1&select=myId:id", status: 200, json: [{ myId: 1 }] },
  {
    name: "cast to text",
    url: "complex_items?select=id::text",
    status: 200,
    json: [{ id: "1" }, { id: "2" }, { id: "3" }],
  },
  {
    name: "rename and cast",
    url: "complex_items?id=eq.1&select=myId:id::text",
    status: 200,
    json: [{ myId: "1" }],
  },
  {
    name: "a cast to a type that does not exist: 400 42704",
    url: "complex_items?select=id::fakecolumntype",
    status: 400,
    json: err("42704", 'type "fakecolumntype" does not exist'),
    bytes: 94,
  },
  {
    name: "parents and children",
    url: "projects?id=eq.1&select=id, name, clients(*), tasks(id, name)",
    status: 200,
    json: [{
      id: 1,
      name: "Windows 7",
      clients: { id: 1, name: "Microsoft" },
      tasks: [{ id: 1, name: "Design w7" }, { id: 2, name: "Code w7" }],
    }],
    bytes: 141,
  },
  {
    name: "parents and children of a view",
    url: "projects_view?id=eq.1&select=id, name, clients(*), tasks(id, name)",
    status: 200,
    json: [{
      id: 1,
      name: "Windows 7",
      clients: { id: 1, name: "Microsoft" },
      tasks: [{ id: 1, name: "Design w7" }, { id: 2, name: "Code w7" }],
    }],
  },
  {
    name: "parents and children of a view with renamed keys",
    url: "projects_view_alt?t_id=eq.1&select=t_id, name, clients(*), tasks(id, name)",
    status: 200,
    json: [{
      t_id: 1,
      name: "Windows 7",
      clients: { id: 1, name: "Microsoft" },
      tasks: [{ id: 1, name: "Design w7" }, { id: 2, name: "Code w7" }],
    }],
  },
  {
    name: "many-to-many",
    url: "tasks?select=id,users(id)",
    status: 200,
    json: [
      { id: 1, users: ids(1, 3) },
      { id: 2, users: ids(1) },
      { id: 3, users: ids(1) },
      { id: 4, users: ids(1) },
      { id: 5, users: ids(2, 3) },
      { id: 6, users: ids(2) },
      { id: 7, users: ids(2) },
      { id: 8, users: [] },
    ],
  },
  {
    name: "two aliased children with and/or",
    url: "entities?select=id,children:child_entities(id,gChildren:grandchild_entities(id))" +
      "&children.and=(id.in.(1,2,3))&children.gChildren.or=(id.eq.1,id.eq.2)",
    status: 200,
    json: [
      { id: 1, children: [{ id: 1, gChildren: ids(1, 2) }, { id: 2, gChildren: [] }] },
      { id: 2, children: [{ id: 3, gChildren: [] }] },
      { id: 3, children: [] },
      { id: 4, children: [] },
    ],
  },
  {
    name: "order nullsfirst",
    url: "no_pk?order=a.nullsfirst",
    status: 200,
    json: [{ a: null, b: null }, { a: "1", b: "0" }, { a: "2", b: "0" }],
    expect: { "content-range": "0-2/*" },
  },
  {
    name: "order desc.nullslast",
    url: "no_pk?order=a.desc.nullslast",
    status: 200,
    json: [{ a: "2", b: "0" }, { a: "1", b: "0" }, { a: null, b: null }],
  },
  {
    name: "order by two columns",
    url: "projects?select=client_id,id,name&order=client_id.desc.nullslast,id.desc",
    status: 200,
    json: [
      { client_id: 2, id: 4, name: "OSX" },
      { client_id: 2, id: 3, name: "IOS" },
      { client_id: 1, id: 2, name: "Windows 10" },
      { client_id: 1, id: 1, name: "Windows 7" },
      { client_id: null, id: 5, name: "Orphan" },
    ],
    expect: { "content-range": "0-4/*" },
  },
  {
    name: "order of an embed, two levels",
    url:
      "projects?id=eq.1&select=id, name, tasks(id, name, users(id, name))&tasks.order=name.asc&tasks.users.order=name.desc",
    status: 200,
    json: [{
      id: 1,
      name: "Windows 7",
      tasks: [
        { id: 2, name: "Code w7", users: [{ id: 1, name: "Angela Martin" }] },
        {
          id: 1,
          name: "Design w7",
          users: [{ id: 3, name: "Dwight Schrute" }, { id: 1, name: "Angela Martin" }],
        },
      ],
    }],
  },
  {
    name: "order of an embedded parent",
    url: "projects?id=eq.1&select=id, name, clients(id, name)&clients.order=name.asc",
    status: 200,
    json: [{ id: 1, name: "Windows 7", clients: { id: 1, name: "Microsoft" } }],
  },
  {
    name: "a bad order: PGRST100 with the parser's position",
    url: "items?order=id.asc.nullslasttt",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse order (id.asc.nullslasttt)" (line 1, column 17)',
      "unexpected 't' expecting \",\" or end of input",
    ),
    expect: { "content-type": JSON_TYPE },
    bytes: 169,
  },
  {
    name: "an unknown Accept: 406",
    url: "simple_pk",
    headers: { accept: "text/unknowntype" },
    status: 406,
    json: err("PGRST107", "None of these media types are available: text/unknowntype"),
    bytes: 116,
  },
  { name: "*/*", url: "simple_pk", headers: { accept: "*/*" }, status: 200 },
  {
    name: "*/* rescues an unknown type",
    url: "simple_pk",
    headers: { accept: "text/unknowntype, */*" },
    status: 200,
  },
  {
    name: "text/csv before */*",
    url: "simple_pk",
    headers: { accept: "text/csv, */*" },
    status: 200,
    expect: { "content-type": "text/csv; charset=utf-8" },
  },
  {
    name: "text/csv before application/json",
    url: "simple_pk",
    headers: { accept: "text/csv, application/json" },
    status: 200,
    expect: { "content-type": "text/csv; charset=utf-8" },
  },
  {
    name: "an unknown type then text/csv",
    url: "simple_pk",
    headers: { accept: "text/unknowntype, text/csv" },
    status: 200,
  },
  {
    name: "text/csv with a parameter",
    url: "simple_pk?order=k.desc",
    headers: { accept: "text/csv; version=1" },
    status: 200,
    text: "k,extra\nxyyx,u\nxYYx,v",
    expect: { "content-type": "text/csv; charset=utf-8" },
    bytes: 21,
  },
  {
    name: "Content-Location sorts the parameters",
    url: "no_pk?b=eq.1&a=eq.1",
    status: 200,
    json: [],
    expect: { "content-location": "/no_pk?a=eq.1&b=eq.1" },
  },
  {
    name: "Content-Location without parameters",
    url: "simple_pk",
    status: 200,
    expect: { "content-location": "/simple_pk" },
  },
  {
    name: "a table named with a semicolon",
    url: "Escap3e;",
    status: 200,
    json: [1, 2, 3, 4, 5].map((so6meIdColumn) => ({ so6meIdColumn })),
  },
  {
    name: "a camelCase table",
    url: "ghostBusters",
    status: 200,
    json: [1, 3, 5].map((escapeId) => ({ escapeId })),
  },
  {
    name: "a filter without an operator",
    url: "ghostBusters?id=0",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse filter (0)" (line 1, column 1)',
      'unexpected "0" expecting "not" or operator (eq, gt, ...)',
    ),
  },
  {
    name: "embed a camelCase table",
    url: "Escap3e;?select=ghostBusters(*)",
    status: 200,
    json: [
      { ghostBusters: [{ escapeId: 1 }] },
      { ghostBusters: [] },
      { ghostBusters: [{ escapeId: 3 }] },
      { ghostBusters: [] },
      { ghostBusters: [{ escapeId: 5 }] },
    ],
  },
  {
    name: "a table and a column with blanks",
    url: "Server%20Today?select=Just%20A%20Server%20Model&Just%20A%20Server%20Model=like.*91*",
    status: 200,
    json: [
      { "Just A Server Model": " IBM,9113-550 (P5-550)" },
      { "Just A Server Model": " IBM,9113-550 (P5-550)" },
      { "Just A Server Model": " IBM,9131-52A (P5-52A)" },
      { "Just A Server Model": " IBM,9133-55A (P5-55A)" },
    ],
  },
  {
    name: "quoted columns with PostgREST's reserved characters",
    url: "pgrst_reserved_chars?select=%22:arr-%3Eow::cast%22,%22(inside,parens)%22,%22a.dotted.column%22," +
      "%22%20%20col%20%20w%20%20space%20%20%22&%22*id*%22=eq.1",
    status: 200,
    json: [{
      ":arr->ow::cast": " arrow-1 ",
      "(inside,parens)": " parens-1 ",
      "a.dotted.column": " dotted-1 ",
      "  col  w  space  ": " space-1",
    }],
  },
  {
    name: "columns with dollars",
    url: "do$llar$s?select=a$num$&a$num$=eq.100",
    status: 200,
    json: [{ a$num$: 100 }],
  },
  {
    name: "in with a quoted comma",
    url: 'w_or_wo_comma_names?name=in.("Hebdon, John")',
    status: 200,
    json: [{ name: "Hebdon, John" }],
  },
  {
    name: "not.in with quoted values and a limit",
    url: 'w_or_wo_comma_names?name=not.in.("Hebdon, John","Williams, Mary","Smith, Joseph")&limit=3',
    status: 200,
    json: [{ name: "David White" }, { name: "Larry Thompson" }, { name: "Double O Seven(007)" }],
  },
  {
    name: "in with and without quotes",
    url: 'w_or_wo_comma_names?name=in.(David White,"Hebdon, John")',
    status: 200,
    json: [{ name: "Hebdon, John" }, { name: "David White" }],
  },
  {
    name: "in with quoted parentheses",
    url: 'w_or_wo_comma_names?name=in.("Double O Seven(007)")',
    status: 200,
    json: [{ name: "Double O Seven(007)" }],
  },
  {
    name: "in with escaped double quotes",
    url: 'w_or_wo_comma_names?name=in.("Double\\"Quote\\"McGraw\\"")',
    status: 200,
    json: [{ name: 'Double"Quote"McGraw"' }],
  },
  {
    name: "in with an escaped backslash",
    url: 'w_or_wo_comma_names?name=in.("\\\\")',
    status: 200,
    json: [{ name: "\\" }],
  },
  {
    name: "in with escaped backslashes",
    url: 'w_or_wo_comma_names?name=in.("/\\\\Slash/\\\\Beast/\\\\")',
    status: 200,
    json: [{ name: "/\\Slash/\\Beast/\\" }],
  },
  {
    name: "in: any escaped character is itself",
    url: 'w_or_wo_comma_names?name=in.("D\\a\\vid W\\h\\ite")',
    status: 200,
    json: [{ name: "David White" }],
  },
  {
    name: "in with a lone double quote",
    url: 'w_or_wo_comma_names?name=in.(")',
    status: 200,
    json: [{ name: '"' }],
  },
  {
    name: "in with unquoted double quotes",
    url: 'w_or_wo_comma_names?name=in.(Double"Quote"McGraw")',
    status: 200,
    json: [{ name: 'Double"Quote"McGraw"' }],
  },
  {
    name: "in with an unquoted backslash",
    url: "w_or_wo_comma_names?name=in.(\\)",
    status: 200,
    json: [{ name: "\\" }],
  },
  {
    name: "in with unquoted backslashes",
    url: "w_or_wo_comma_names?name=in.(/\\Slash/\\Beast/\\)",
    status: 200,
    json: [{ name: "/\\Slash/\\Beast/\\" }],
  },
  ...["int", "text", "bool", "bin", "char", "date", "real", "time"].map((col): WireCase => ({
    name: `in.() on ${col}_data`,
    url: `items_with_different_col_types?${col}_data=in.()`,
    status: 200,
    json: [],
  })),
  {
    name: "not.in.() returns every row",
    url: "items_with_different_col_types?int_data=not.in.()&select=int_data",
    status: 200,
    json: [{ int_data: 1 }],
  },
  {
    name: "in.() with blanks",
    url: "items_with_different_col_types?int_data=in.(    )",
    status: 200,
    json: [],
  },
  {
    name: "in.( ,3,4): an empty value is an error",
    url: "items_with_different_col_types?int_data=in.( ,3,4)",
    status: 400,
    json: err("22P02", 'invalid input syntax for type integer: ""'),
  },
  {
    name: "an empty embed on many-to-one",
    url: "projects?select=id,name,clients!inner()&clients.id=eq.2",
    status: 200,
    json: [{ id: 3, name: "IOS" }, { id: 4, name: "OSX" }],
  },
  {
    name: "an empty embed on many-to-many",
    url: "users?select=*,tasks!inner()&tasks.id=eq.3",
    status: 200,
    json: [{ id: 1, name: "Angela Martin" }],
  },
  {
    name: "an empty embed, nested",
    url: "users?select=*,tasks!inner(projects(clients()),users_tasks(),name)&tasks.id=eq.3",
    status: 200,
    json: [{ id: 1, name: "Angela Martin", tasks: [{ name: "Design w10" }] }],
  },
  {
    name: "an empty select: every column",
    url: "projects?select=",
    status: 200,
    json: [
      { id: 1, name: "Windows 7", client_id: 1 },
      { id: 2, name: "Windows 10", client_id: 1 },
      { id: 3, name: "IOS", client_id: 2 },
      { id: 4, name: "OSX", client_id: 2 },
      { id: 5, name: "Orphan", client_id: null },
    ],
  },
  {
    name: "an empty select on a function",
    url: "rpc/getallprojects?select=",
    status: 200,
    json: [
      { id: 1, name: "Windows 7", client_id: 1 },
      { id: 2, name: "Windows 10", client_id: 1 },
      { id: 3, name: "IOS", client_id: 2 },
      { id: 4, name: "OSX", client_id: 2 },
      { id: 5, name: "Orphan", client_id: null },
    ],
  },
  {
    name: "eq(any)",
    url: "projects?id=eq(any).{3,4,5}",
    status: 200,
    json: [
      { id: 3, name: "IOS", client_id: 2 },
      { id: 4, name: "OSX", client_id: 2 },
      { id: 5, name: "Orphan", client_id: null },
    ],
  },
  {
    name: "gt(all)",
    url: "projects?id=gt(all).{4,3}",
    status: 200,
    json: [{ id: 5, name: "Orphan", client_id: null }],
  },
  {
    name: "lte(all)",
    url: "projects?id=lte(all).{4,3}",
    status: 200,
    json: [
      { id: 1, name: "Windows 7", client_id: 1 },
      { id: 2, name: "Windows 10", client_id: 1 },
      { id: 3, name: "IOS", client_id: 2 },
    ],
  },
  {
    name: "like(any)",
    url: "articles?body=like(any).{%25plan%25,%25brain%25}&select=id",
    status: 200,
    json: ids(1, 2),
  },
  {
    name: "ilike(all)",
    url: "articles?body=ilike(all).{%25plan%25,%25greatness%25}&select=id",
    status: 200,
    json: ids(1),
  },
  { name: "match(any)", url: "articles?body=match(any).{stop,thing}&select=id", status: 200, json: ids(1) },
  {
    name: "imatch(any)",
    url: "articles?body=imatch(any).{stop,thing}&select=id",
    status: 200,
    json: ids(1, 2),
  },
  {
    name: "a column that does not exist: 400 42703",
    url: "complex_items?select=id,banana",
    status: 400,
    json: err("42703", "column complex_items.banana does not exist"),
  },
  {
    name: "infinite recursion in a view: 500 42P17",
    url: "infinite_recursion?select=*",
    status: 500,
    json: err("42P17", 'infinite recursion detected in rules for relation "infinite_recursion"'),
    bytes: 128,
  },
  {
    name: "an invalid resource path: 404 PGRST125",
    url: "first/second/third?select=*",
    status: 404,
    json: err("PGRST125", "Invalid path specified in request URL"),
    bytes: 96,
  },
];

/** test/spec/Feature/Query/AndOrParamsSpec.hs */
const AND_OR_SPEC: WireCase[] = [
  { name: "or", url: "entities?or=(id.eq.1,id.eq.2)&select=id", status: 200, json: ids(1, 2) },
  { name: "not.or", url: "entities?not.or=(id.eq.1,id.eq.2)&select=id", status: 200, json: ids(3, 4) },
  {
    name: "or and a filter",
    url: "entities?or=(id.eq.1,id.eq.2)&name=eq.entity 1&select=id",
    status: 200,
    json: ids(1),
  },
  {
    name: "or on an embed",
    url: "entities?child_entities.or=(id.eq.1,name.eq.child entity 2)&select=id,child_entities(id)",
    status: 200,
    json: [
      { id: 1, child_entities: ids(1, 2) },
      { id: 2, child_entities: [] },
      { id: 3, child_entities: [] },
      { id: 4, child_entities: [] },
    ],
  },
  {
    name: "or nested in and",
    url: "entities?or=(and(name.eq.entity 2,id.eq.2),and(name.eq.entity 1,id.eq.1))&select=id",
    status: 200,
    json: ids(1, 2),
  },
  {
    name: "not.and nested",
    url: "entities?or=(not.and(name.eq.entity 2,id.eq.2),not.and(name.eq.entity 1,id.eq.1))&select=id",
    status: 200,
    json: ids(1, 2, 3, 4),
  },
  {
    name: "and and or side by side",
    url: "entities?and=(id.eq.1,name.eq.entity 1)&or=(id.eq.1,id.eq.2)&select=id",
    status: 200,
    json: ids(1),
  },
  {
    name: "eq and neq (a stray closing parenthesis)",
    url: "entities?and=(id.eq.1,id.neq.2))&select=id",
    status: 200,
    json: ids(1),
  },
  { name: "lt and gt", url: "entities?or=(id.lt.2,id.gt.3)&select=id", status: 200, json: ids(1, 4) },
  {
    name: "like and ilike",
    url: "entities?or=(name.like.*1,name.ilike.*ENTITY 2)&select=id",
    status: 200,
    json: ids(1, 2),
  },
  { name: "in", url: "entities?or=(id.in.(1,2),id.in.(3,4))&select=id", status: 200, json: ids(1, 2, 3, 4) },
  { name: "is", url: "entities?and=(name.is.null,arr.is.null)&select=id", status: 200, json: ids(4) },
  {
    name: "fts on tsvector",
    url: "entities?or=(text_search_vector.fts.bar,text_search_vector.fts.baz)&select=id",
    status: 200,
    json: ids(1, 2),
  },
  {
    name: "fts on jsonb",
    url: "grandchild_entities?or=(jsonb_col.fts.bar,jsonb_col.fts.foo)&select=jsonb_col",
    status: 200,
    json: [{ jsonb_col: { a: { b: "foo" } } }, { jsonb_col: { b: "bar" } }],
  },
  {
    name: "isdistinct",
    url: "entities?and=(id.gte.2,arr.isdistinct.{1,2})&select=id",
    status: 200,
    json: ids(3, 4),
  },
  {
    name: "cs and cd",
    url: "entities?or=(arr.cs.{1,2,3},arr.cd.{1})&select=id",
    status: 200,
    json: ids(1, 3),
  },
  { name: "array ov {3}", url: "entities?arr=ov.{3}&select=id", status: 200, json: ids(3) },
  { name: "array ov {2,3}", url: "entities?arr=ov.{2,3}&select=id", status: 200, json: ids(2, 3) },
  {
    name: "array isdistinct",
    url: "entities?arr=isdistinct.{1,2}&select=id",
    status: 200,
    json: ids(1, 3, 4),
  },
  {
    name: "eq, cs, like negated",
    url: "entities?and=(arr.not.cs.{1,2,3},and(id.not.eq.2,name.not.like.*3))&select=id",
    status: 200,
    json: ids(1),
  },
  {
    name: "in, is, fts negated",
    url: "entities?and=(id.not.in.(1,3),and(name.not.is.null,text_search_vector.not.fts.foo))&select=id",
    status: 200,
    json: ids(2),
  },
  {
    name: "lt, gte, cd negated",
    url: "entities?and=(arr.not.cd.{1},or(id.not.lt.1,id.not.gte.3))&select=id",
    status: 200,
    json: ids(2, 3),
  },
  {
    name: "gt, lte, ilike negated",
    url: "entities?and=(name.not.ilike.*ITY2,or(id.not.gt.4,id.not.lte.1))&select=id",
    status: 200,
    json: ids(1, 2, 3),
  },
  {
    name: "isdistinct negated",
    url: "entities?and=(id.not.eq.2,arr.not.isdistinct.{1,2,3})&select=id",
    status: 200,
    json: ids(3),
  },
  {
    name: "eq with quotes",
    url: 'grandchild_entities?or=(name.eq."(grandchild,entity,4)",name.eq."(grandchild,entity,5)")&select=id',
    status: 200,
    json: ids(4, 5),
  },
  {
    name: "like and ilike with quotes",
    url: 'grandchild_entities?or=(name.like."*ity,4*",name.ilike."*ITY,5)")&select=id',
    status: 200,
    json: ids(4, 5),
  },
  {
    name: "in with quotes",
    url: 'grandchild_entities?or=(id.in.("1","2"),id.in.("3","4"))&select=id',
    status: 200,
    json: ids(1, 2, 3, 4),
  },
  {
    name: "whitespace",
    url: "entities?and=( and ( id.in.( 1, 2, 3 ) , id.eq.3 ) , or ( id.eq.2 , id.eq.3 ) )&select=id",
    status: 200,
    json: ids(3),
  },
  {
    name: "zero conditions: PGRST100",
    url: "entities?or=()",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse logic tree (())" (line 1, column 4)',
      'unexpected ")" expecting field name (* or [a..z0..9_$]), negation operator (not) or logic operator (and, or)',
    ),
  },
  { name: "one condition in or", url: "entities?or=(id.eq.1)&select=id", status: 200, json: ids(1) },
  { name: "one condition in and", url: "entities?and=(id.eq.1)&select=id", status: 200, json: ids(1) },
  {
    name: "four conditions",
    url: "grandchild_entities?or=( id.eq.1, id.eq.2, and(id.in.(1,3), id.in.(2,3)), id.eq.4 )&select=id",
    status: 200,
    json: ids(1, 2, 3, 4),
  },
  {
    name: "four conditions with not.or",
    url:
      "grandchild_entities?and=( id.eq.1, not.or(id.eq.2, id.eq.3), id.in.(1,4), or(id.eq.1, id.eq.4) )&select=id",
    status: 200,
    json: ids(1),
  },
  {
    name: "POST with a filtered embed",
    method: "POST",
    url: "child_entities?select=id,entities(id)&entities.or=(id.eq.2,id.eq.3)&entities.order=id",
    headers: { prefer: "return=representation, tx=rollback" },
    body: JSON.stringify([
      { id: 7, name: "entity 4", parent_id: 1 },
      { id: 8, name: "entity 5", parent_id: 2 },
      { id: 9, name: "entity 6", parent_id: 3 },
    ]),
    status: 201,
    json: [{ id: 7, entities: null }, { id: 8, entities: { id: 2 } }, { id: 9, entities: { id: 3 } }],
  },
  {
    name: "PATCH with or",
    method: "PATCH",
    url: "grandchild_entities?or=(id.eq.1,id.eq.2)&select=id,name",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"name": "updated grandchild entity"}',
    status: 200,
    json: [{ id: 1, name: "updated grandchild entity" }, { id: 2, name: "updated grandchild entity" }],
  },
  {
    name: "DELETE with or",
    method: "DELETE",
    url: "grandchild_entities?or=(id.eq.1,id.eq.2)&select=id,name",
    headers: { prefer: "return=representation, tx=rollback" },
    status: 200,
    json: [{ id: 1, name: "grandchild entity 1" }, { id: 2, name: "grandchild entity 2" }],
  },
  {
    name: "columns that begin with and/or",
    url: "grandchild_entities?or=(and_starting_col.eq.smth, or_starting_col.eq.smth)",
    status: 200,
  },
];

/** test/spec/Feature/Query/JsonOperatorSpec.hs */
const JSON_OPERATOR_SPEC: WireCase[] = [
  {
    name: "->> cast to json",
    url: "complex_items?id=eq.1&select=settings->>foo::json",
    status: 200,
    json: [{ foo: { int: 1, bar: "baz" } }],
  },
  {
    name: "a bad cast of the data: 400 22P02",
    url: "complex_items?select=settings->foo->>bar::integer",
    status: 400,
    json: err("22P02", 'invalid input syntax for type integer: "baz"'),
  },
  {
    name: "non reserved special characters in a key",
    url: "json_arr?id=eq.10&select=data->!@%23$%25^%26*_d->>!@%23$%25^%26*_e::integer",
    status: 200,
    json: [{ "!@#$%^&*_e": 3 }],
  },
  {
    name: "a reserved character in a key: PGRST100",
    url: "json_arr?id=eq.10&select=data->(!@%23$%25^%26*_d->>!@%23$%25^%26*_e::integer",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse select parameter (data->(!@#$%^&*_d->>!@#$%^&*_e::integer)" (line 1, column 7)',
      'unexpected "(" expecting "-", digit or any non reserved character different from: .,>()',
    ),
  },
  {
    name: "->> then -> an index: 404 42883",
    url: "json_arr?select=data->>c->1",
    status: 404,
  },
  {
    name: "a bad arrow: PGRST100",
    url: "json_arr?select=data->>--34",
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse select parameter (data->>--34)" (line 1, column 9)',
      'unexpected "-" expecting digit',
    ),
  },
  {
    name: "an index cast",
    url: "json_arr?select=data->>0::int&id=in.(1,2)",
    status: 200,
    json: [{ data: 1 }, { data: 4 }],
  },
  {
    name: "index casts with aliases",
    url: "json_arr?select=idx0:data->>0::int,idx1:data->>1::int&id=in.(1,2)",
    status: 200,
    json: [{ idx0: 1, idx1: 2 }, { idx0: 4, idx1: 5 }],
  },
  {
    name: "a nested index",
    url: "json_arr?select=data->0->>1::int&id=in.(3,4)",
    status: 200,
    json: [{ data: 8 }, { data: 7 }],
  },
  {
    name: "three indexes",
    url: "json_arr?select=data->0->0->>1::int&id=in.(3,4)",
    status: 200,
    json: [{ data: null }, { data: 6 }],
  },
  {
    name: "an index then a key",
    url: "json_arr?select=data->0->>a&id=in.(5,6)",
    status: 200,
    json: [{ a: "A" }, { a: "[1,2,3]" }],
  },
  {
    name: "a key then an index: named by the key",
    url: "json_arr?select=data->0->a->>2&id=in.(5,6)",
    status: 200,
    json: [{ a: null }, { a: "3" }],
  },
  {
    name: "an index in an object's key, cast to json",
    url: "json_arr?select=data->c->>0::json&id=in.(7,8)",
    status: 200,
    json: [{ c: 1 }, { c: { d: [4, 5, 6, 7, 8] } }],
  },
  {
    name: "keys and indexes",
    url: "json_arr?select=data->c->0->d->>4::int&id=in.(7,8)",
    status: 200,
    json: [{ d: null }, { d: 8 }],
  },
  {
    name: "only well formed numbers are indexes",
    url: "json_arr?select=data->0->0xy1->1->23-xy-45->1->xy-6->>0::int&id=eq.9",
    status: 200,
    json: [{ "xy-6": 3 }],
  },
  {
    name: "a path ending in a key",
    url: "json_arr?select=data->c&id=in.(7,8)",
    status: 200,
    json: [{ c: [1, 2, 3] }, { c: [{ d: [4, 5, 6, 7, 8] }] }],
  },
  {
    name: "a path ending in an index",
    url: "json_arr?select=data->c->0->d&id=eq.8",
    status: 200,
    json: [{ d: [4, 5, 6, 7, 8] }],
  },
  {
    name: "a negative index: the last element",
    url: "json_arr?select=data&data->-1->b->>-1=eq.5",
    status: 200,
    json: [{ data: [{ a: [1, 2, 3] }, { b: [4, 5] }] }],
  },
  {
    name: "a negative index in a filter",
    url: "json_arr?select=data&data->-1->>b=eq.B",
    status: 200,
    json: [{ data: [{ a: "A" }, { b: "B" }] }],
  },
];

/** test/spec/Feature/Query/SingularSpec.hs */
const SINGULAR_SPEC: WireCase[] = [
  {
    name: "PATCH of several rows: 406, nothing written",
    method: "PATCH",
    url: "addresses",
    headers: { ...singular, prefer: "tx=commit" },
    body: '{"address": "zzz"}',
    status: 406,
    json: coerce(4),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "PATCH of several rows with return=representation",
    method: "PATCH",
    url: "addresses",
    headers: { ...singular, prefer: "tx=commit, return=representation" },
    body: '{"address": "zzz"}',
    status: 406,
    json: coerce(4),
  },
  {
    name: "…and the rows are unchanged",
    url: "addresses?id=eq.1",
    status: 200,
    json: [{ id: 1, address: "address 1" }],
  },
  {
    name: "PATCH of no row",
    method: "PATCH",
    url: "items?id=gt.0&id=lt.0",
    headers: singular,
    body: '{"id":1}',
    status: 406,
    json: coerce(0),
  },
  {
    name: "POST of two rows",
    method: "POST",
    url: "addresses",
    headers: { ...singular, prefer: "tx=commit" },
    body: '[{"id": 200, "address": "xxx"}, {"id": 201, "address": "yyy"}]',
    status: 406,
    json: coerce(2),
  },
  { name: "…and no row was written", url: "addresses?id=eq.200", status: 200, json: [] },
  {
    name: "POST of two rows with return=minimal",
    method: "POST",
    url: "addresses",
    headers: { ...singular, prefer: "tx=commit, return=minimal" },
    body: '[{"id": 204, "address": "xxx"}, {"id": 205, "address": "yyy"}]',
    status: 406,
    json: coerce(2),
  },
  {
    name: "POST of no row",
    method: "POST",
    url: "addresses",
    headers: singular,
    body: "[]",
    status: 406,
    json: coerce(0),
  },
  {
    name: "POST of one row with return=minimal",
    method: "POST",
    url: "addresses",
    headers: { ...singular, prefer: "return=minimal, tx=rollback" },
    body: '[{"id": 103, "address": "xxx"}]',
    status: 201,
    text: "",
    expect: {
      "content-type": null,
      "content-range": "*/*",
      "preference-applied": "return=minimal, tx=rollback",
    },
  },
  {
    name: "DELETE of five rows",
    method: "DELETE",
    url: "items?id=gt.0&id=lt.6",
    headers: { ...singular, prefer: "tx=commit" },
    status: 406,
    json: coerce(5),
  },
  {
    name: "…and the rows are still there",
    url: "items?id=gt.0&id=lt.6&order=id",
    status: 200,
    json: ids(1, 2, 3, 4, 5),
    expect: { "content-range": "0-4/*" },
  },
  {
    name: "DELETE of no row with return=representation",
    method: "DELETE",
    url: "items?id=lt.0",
    headers: { ...singular, prefer: "return=representation" },
    status: 406,
    json: coerce(0),
  },
  {
    name: "a function with no row",
    method: "POST",
    url: "rpc/getproject",
    headers: singular,
    body: '{"id": 9999999}',
    status: 406,
    json: coerce(0),
  },
  {
    name: "a function's scalar",
    method: "POST",
    url: "rpc/sayhello",
    headers: singular,
    body: '{"name": "world"}',
    status: 200,
    json: "Hello, world",
  },
  {
    name: "a function's one row",
    method: "POST",
    url: "rpc/getproject",
    headers: singular,
    body: '{"id": 1}',
    status: 200,
    json: { id: 1, name: "Windows 7", client_id: 1 },
    expect: { "content-type": "application/vnd.pgrst.object+json; charset=utf-8" },
  },
  {
    name: "a function's five rows",
    method: "POST",
    url: "rpc/getallprojects",
    headers: singular,
    body: "{}",
    status: 406,
    json: coerce(5),
  },
  {
    name: "a function that writes two rows: 406, rolled back",
    method: "POST",
    url: "rpc/setprojects",
    headers: { ...singular, prefer: "tx=commit" },
    body: '{"id_l": 1, "id_h": 2, "name": "changed"}',
    status: 406,
    json: coerce(2),
  },
  {
    name: "…and the function's write was rolled back",
    method: "POST",
    url: "rpc/getproject?select=id,name",
    body: '{"id": 1}',
    status: 200,
    json: [{ id: 1, name: "Windows 7" }],
  },
];

const planned = { prefer: "count=planned" };

/** test/spec/Feature/Query/RangeSpec.hs */
const RANGE_SPEC: WireCase[] = [
  // "when count=planned".
  {
    name: "count=planned obtains a filtered range",
    url: "items?select=id&id=gt.8",
    headers: planned,
    status: 206,
    json: ids(9, 10, 11, 12, 13, 14, 15),
    expect: { "content-range": "0-6/8" },
  },
  {
    name: "count=planned obtains a filtered range (child_entities)",
    url: "child_entities?select=id&id=gt.3",
    headers: planned,
    status: 206,
    json: ids(4, 5, 6),
    expect: { "content-range": "0-2/4" },
  },
  {
    name: "count=planned obtains the full range",
    method: "HEAD",
    url: "items",
    headers: planned,
    status: 200,
    expect: { "content-type": JSON_TYPE, "content-range": "0-14/15" },
  },
  {
    name: "count=planned obtains the full range (child_entities)",
    method: "HEAD",
    url: "child_entities",
    headers: planned,
    status: 200,
    expect: { "content-type": JSON_TYPE, "content-range": "0-5/6" },
  },
  {
    name: "count=planned ignores limit/offset on the planned count",
    method: "HEAD",
    url: "items?limit=2&offset=3",
    headers: planned,
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "3-4/15" },
  },
  {
    name: "count=planned ignores limit on the planned count (child_entities)",
    method: "HEAD",
    url: "child_entities?limit=2",
    headers: planned,
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "0-1/6" },
  },
  {
    name: "count=planned obtains a filtered range (a view over a function of 2,019 estimated rows)",
    url: "getallprojects_view?select=id&id=lt.3",
    headers: planned,
    status: 206,
    json: ids(1, 2),
    expect: { "content-range": "0-1/673" },
  },
  {
    name: "count=planned obtains the full range (getallprojects_view)",
    method: "HEAD",
    url: "getallprojects_view",
    headers: planned,
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "0-4/2019" },
  },
  {
    name: "count=planned ignores limit on the planned count (getallprojects_view)",
    method: "HEAD",
    url: "getallprojects_view?limit=2",
    headers: planned,
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "0-1/2019" },
  },
  {
    name: "count=planned works with two levels",
    method: "HEAD",
    url: "child_entities?select=*,entities(*)",
    headers: planned,
    status: 200,
    expect: { "content-type": JSON_TYPE, "content-range": "0-5/6" },
  },
  {
    name: "a function's rows, Content-Range",
    url: "rpc/getitemrange?order=id&min=0&max=15",
    status: 200,
    expect: { "content-range": "0-14/*" },
  },
  {
    name: "an offset past no rows: 416",
    url: "rpc/getitemrange?offset=1&min=2&max=2",
    headers: { prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 1 was requested, but there are only 0 rows.",
    ),
    expect: { "content-range": "*/0" },
    bytes: 144,
  },
  {
    name: "a function's rows by Range: 0-1",
    url: "rpc/getitemrange?min=0&max=15",
    headers: { "range-unit": "items", range: "0-1" },
    status: 200,
    expect: { "content-range": "0-1/*" },
  },
  {
    name: "a function's rows by Range past the end: truncated",
    url: "rpc/getitemrange?min=0&max=15",
    headers: { "range-unit": "items", range: "10-100" },
    status: 200,
    expect: { "content-range": "10-14/*" },
  },
  {
    name: "a function's offside Range: 416",
    url: "rpc/getitemrange?min=2&max=2",
    headers: { "range-unit": "items", range: "1-0" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "The lower boundary must be lower than or equal to the upper boundary in the Range header.",
    ),
  },
  {
    name: "a function's Range past no rows with count=exact: 416",
    url: "rpc/getitemrange?min=2&max=2",
    headers: { "range-unit": "items", range: "1-2", prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 1 was requested, but there are only 0 rows.",
    ),
    expect: { "content-range": "*/0" },
    bytes: 144,
  },
  {
    name: "a function's Range past the last row with count=exact: 416",
    url: "rpc/getitemrange?min=0&max=15",
    headers: { "range-unit": "items", range: "100-199", prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 100 was requested, but there are only 15 rows.",
    ),
    expect: { "content-range": "*/15" },
  },
  { name: "GET /items: 200", url: "items", status: 200 },
  {
    name: "count=exact of no row: */0",
    url: "items?id=eq.0",
    headers: { prefer: "count=exact" },
    status: 200,
    json: [],
    expect: { "content-range": "*/0" },
  },
  {
    name: "count=none of an empty table: */*",
    url: "menagerie",
    headers: { prefer: "count=none" },
    status: 200,
    json: [],
    expect: { "content-range": "*/*" },
  },
  {
    name: "count=none: range/*",
    url: "items?order=id",
    headers: { prefer: "count=none" },
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    expect: { "content-range": "0-14/*" },
  },
  {
    name: "count=none with a filter",
    url: "items?id=eq.1&order=id",
    headers: { prefer: "count=none" },
    status: 200,
    json: ids(1),
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "limit=3",
    url: "items?select=id&order=id.asc&limit=3",
    status: 200,
    json: ids(1, 2, 3),
    expect: { "content-range": "0-2/*" },
  },
  {
    name: "the Range header over limit",
    url: "items?select=id&order=id.asc&limit=3",
    headers: { "range-unit": "items", range: "0-1" },
    status: 200,
    json: ids(1, 2),
    expect: { "content-range": "0-1/*" },
  },
  {
    name: "limit on every level",
    url:
      "clients?select=id,projects(id,tasks(id))&order=id.asc&limit=1&projects.order=id.asc&projects.limit=2" +
      "&projects.tasks.order=id.asc&projects.tasks.limit=1",
    status: 200,
    json: [{ id: 1, projects: [{ id: 1, tasks: ids(1) }, { id: 2, tasks: ids(3) }] }],
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "limit and offset",
    url: "items?select=id&order=id.asc&limit=3&offset=2",
    status: 200,
    json: ids(3, 4, 5),
    expect: { "content-range": "2-4/*" },
  },
  {
    name: "limit and offset on HEAD",
    method: "HEAD",
    url: "items?select=id&order=id.asc&limit=3&offset=2",
    status: 200,
    text: "",
    expect: { "content-type": JSON_TYPE, "content-range": "2-4/*" },
  },
  {
    name: "limit with nulls ordering",
    url:
      "clients?select=id,projects(id,tasks(id))&order=id.asc.nullslast&limit=1&projects.order=id.asc.nullsfirst" +
      "&projects.limit=2",
    status: 200,
    json: [{ id: 1, projects: [{ id: 1, tasks: ids(1, 2) }, { id: 2, tasks: ids(3, 4) }] }],
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "offset=0 of no row",
    url: "items?offset=0&id=eq.0",
    status: 200,
    json: [],
    expect: { "content-range": "*/*" },
  },
  {
    name: "offset=0 of no row, count=exact",
    url: "items?offset=0&id=eq.0",
    headers: { prefer: "count=exact" },
    status: 200,
    json: [],
    expect: { "content-range": "*/0" },
  },
  {
    name: "offset=0",
    url: "items?select=id&offset=0&order=id",
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    expect: { "content-range": "0-14/*" },
  },
  {
    name: "a negative offset is ignored",
    url: "items?select=id&offset=-4&order=id",
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    expect: { "content-range": "0-14/*" },
  },
  {
    name: "limit=0",
    url: "items?select=id&limit=0",
    status: 200,
    json: [],
    expect: { "content-range": "*/*" },
  },
  {
    name: "a negative limit: 416",
    url: "items?select=id&limit=-1",
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "Limit should be greater than or equal to zero.",
    ),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "an offset past no rows of a table: 416",
    url: "menagerie?offset=1",
    headers: { prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 1 was requested, but there are only 0 rows.",
    ),
    expect: { "content-range": "*/0" },
    bytes: 144,
  },
  {
    name: "Range 0-1",
    url: "items",
    headers: { "range-unit": "items", range: "0-1" },
    status: 200,
    expect: { "content-range": "0-1/*" },
  },
  { name: "an open-ended Range", url: "items", headers: { "range-unit": "items", range: "0-" }, status: 200 },
  {
    name: "a Range of an empty table",
    url: "menagerie",
    headers: { "range-unit": "items", range: "0-1" },
    status: 200,
    text: "[]",
    expect: { "content-range": "*/*" },
  },
  {
    name: "Range 0-0",
    url: "items",
    headers: { "range-unit": "items", range: "0-0" },
    status: 200,
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "a Range past the end: truncated",
    url: "items",
    headers: { "range-unit": "items", range: "10-100" },
    status: 200,
    expect: { "content-range": "10-14/*" },
  },
  {
    name: "an offside Range: 416",
    url: "items",
    headers: { "range-unit": "items", range: "1-0" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "The lower boundary must be lower than or equal to the upper boundary in the Range header.",
    ),
  },
  {
    name: "a Range past no rows with count=exact: 416",
    url: "menagerie",
    headers: { "range-unit": "items", range: "1-2", prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 1 was requested, but there are only 0 rows.",
    ),
    expect: { "content-range": "*/0" },
    bytes: 144,
  },
  {
    name: "a Range past the last row with count=exact: 416",
    url: "items",
    headers: { "range-unit": "items", range: "100-199", prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 100 was requested, but there are only 15 rows.",
    ),
    expect: { "content-range": "*/15" },
  },
  {
    name: "an offset past the last row: 416",
    url: "rpc/getitemrange?offset=100&min=0&max=15",
    headers: { prefer: "count=exact" },
    status: 416,
    json: err(
      "PGRST103",
      "Requested range not satisfiable",
      "An offset of 100 was requested, but there are only 15 rows.",
    ),
    expect: { "content-range": "*/15" },
  },
];

/** test/spec/Feature/Query/InsertSpec.hs, UpdateSpec.hs, DeleteSpec.hs */
const WRITE_SPEC: WireCase[] = [
  {
    name: "an array with items that are not objects",
    method: "POST",
    url: "articles",
    body: '[{"id": 100, "body": "xxxxx"}, 123, "xxxx", {"id": 111, "body": "xxxx"}]',
    status: 400,
    json: err("PGRST102", "All object keys must match"),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "an array of objects with different keys",
    method: "POST",
    url: "articles",
    body: '[{"id": 100, "body": "xxxxx"}, {"id": 111, "body": "xxxx", "owner": "me"}]',
    status: 400,
    json: err("PGRST102", "All object keys must match"),
  },
  {
    name: "a null in a not null column: 400 23502",
    method: "POST",
    url: "simple_pk",
    body: '{"extra":"foo"}',
    status: 400,
    json: err(
      "23502",
      'null value in column "k" of relation "simple_pk" violates not-null constraint',
      "Failing row contains (null, foo).",
    ),
  },
  {
    name: "invalid JSON",
    method: "POST",
    url: "simple_pk",
    body: "}{ x = 2",
    status: 400,
    json: err("PGRST102", "Empty or invalid json"),
    bytes: 80,
  },
  {
    name: "no payload",
    method: "POST",
    url: "simple_pk",
    body: "",
    status: 400,
    json: err("PGRST102", "Empty or invalid json"),
  },
  {
    name: "a duplicate primary key: 409 23505",
    method: "POST",
    url: "simple_pk",
    body: '{"k":"xyyx", "extra":"e1"}',
    status: 409,
    json: err(
      "23505",
      'duplicate key value violates unique constraint "simple_pk_pkey"',
      "Key (k)=(xyyx) already exists.",
    ),
  },
  {
    name: "a duplicate unique key: 409",
    method: "POST",
    url: "withUnique",
    body: '{"uni":"nodup", "extra":"e2"}',
    status: 409,
  },
  {
    name: "a blank ?columns",
    method: "POST",
    url: "articles?columns=",
    body: '[{"id": 204, "body": "yyy"}, {"id": 205, "body": "zzz"}]',
    status: 400,
    json: err(
      "PGRST100",
      '"failed to parse columns parameter ()" (line 1, column 1)',
      "unexpected end of input expecting field name (* or [a..z0..9_$])",
    ),
  },
  {
    name: "?columns that do not exist",
    method: "POST",
    url: "articles?columns=helicopter",
    body: '[{"id": 204, "body": "yyy"}, {"id": 205, "body": "zzz"}]',
    status: 400,
    json: err("PGRST204", "Could not find the 'helicopter' column of 'articles' in the schema cache"),
  },
  {
    name: "a missing table before invalid ?columns",
    method: "POST",
    url: "garlic?columns=helicopter",
    body: '[{"id": 204, "body": "yyy"}, {"id": 205, "body": "zzz"}]',
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.garlic' in the schema cache"),
  },
  {
    name: "a generated column given a value",
    method: "POST",
    url: "foo?columns=a,b",
    headers: { prefer: "return=representation, missing=default" },
    body: '[{"a": "val"}, {"a": "val", "b": "val"}]',
    status: 400,
    json: err(
      "428C9",
      'cannot insert a non-DEFAULT value into column "b"',
      'Column "b" is a generated column.',
    ),
  },
  {
    name: "PATCH of an unknown table",
    method: "PATCH",
    url: "fake",
    body: '{"real": false}',
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.fake' in the schema cache"),
  },
  {
    name: "PATCH with invalid JSON",
    method: "PATCH",
    url: "simple_pk",
    body: "}{ x = 2",
    status: 400,
    json: err("PGRST102", "Empty or invalid json"),
    bytes: 80,
  },
  {
    name: "PATCH with no payload",
    method: "PATCH",
    url: "items",
    body: "",
    status: 400,
    json: err("PGRST102", "Empty or invalid json"),
  },
  {
    name: "PATCH with ?columns that do not exist",
    method: "PATCH",
    url: "articles?id=eq.1&columns=helicopter",
    headers: { prefer: "return=representation" },
    body: '{"body": "yyy"}',
    status: 400,
    json: err("PGRST204", "Could not find the 'helicopter' column of 'articles' in the schema cache"),
  },
  {
    name: "PATCH of no row with ?columns: 200",
    method: "PATCH",
    url: "articles?id=eq.2001&columns=body",
    headers: { prefer: "return=representation" },
    body: '{"body": "Some real content", "smth": "here", "other": "stuff", "fake_id": 13}',
    status: 200,
  },
  {
    name: "DELETE of an unknown table",
    method: "DELETE",
    url: "foozle?id=eq.101",
    status: 404,
    json: err("PGRST205", "Could not find the table 'public.foozle' in the schema cache"),
  },
];

/** test/spec/Feature/Query/RpcSpec.hs */
const RPC_SPEC: WireCase[] = [
  { name: "POST to an unknown function", method: "POST", url: "rpc/fakefunc", body: "{}", status: 404 },
  {
    name: "an unknown function, a close name",
    url: "rpc/sayhell",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.sayhell without parameters in the schema cache",
      "Searched for the function public.sayhell without parameters, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.sayhello",
    ),
  },
  { name: "a known function without its argument", url: "rpc/sayhello", status: 404 },
  { name: "a known function with another argument", url: "rpc/sayhello?any_arg=value", status: 404 },
  {
    name: "a close argument name",
    url: "rpc/sayhello?nam=Peter",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.sayhello(nam) in the schema cache",
      "Searched for the function public.sayhello with parameter nam, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.sayhello(name)",
    ),
  },
  {
    name: "an extra argument",
    url: "rpc/add_them?a=1&b=2&smthelse=blabla",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.add_them(a, b, smthelse) in the schema cache",
      "Searched for the function public.add_them with parameters a, b, smthelse, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.add_them(a, b)",
    ),
  },
  {
    name: "an overloaded function, an unknown argument",
    url: "rpc/overloaded?wrong_arg=value",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.overloaded(wrong_arg) in the schema cache",
      "Searched for the function public.overloaded with parameter wrong_arg, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "an overloaded function, one unknown argument of three",
    url: "rpc/overloaded?a=1&b=2&wrong_arg=value",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.overloaded(a, b, wrong_arg) in the schema cache",
      "Searched for the function public.overloaded with parameters a, b, wrong_arg, but no matches were found in the schema cache.",
      "Perhaps you meant to call the function public.overloaded(a, b, c)",
    ),
  },
  {
    name: "ambiguous overloads: 300 PGRST203",
    url: "rpc/overloaded_same_args?arg=value",
    status: 300,
    json: err(
      "PGRST203",
      "Could not choose the best candidate function between: public.overloaded_same_args(arg => integer), " +
        "public.overloaded_same_args(arg => xml), public.overloaded_same_args(arg => text, num => integer)",
      null,
      "Try renaming the parameters or the function itself in the database so function overloading can be resolved",
    ),
  },
  {
    name: "DELETE on a function: 405",
    method: "DELETE",
    url: "rpc/sayhello",
    status: 405,
    json: err("PGRST101", "Cannot use the DELETE method on RPC"),
    bytes: 94,
  },
  {
    name: "PT402 with detail and hint",
    url: "rpc/raise_pt402",
    status: 402,
    json: err("PT402", "Payment Required", "Quota exceeded", "Upgrade your plan"),
    bytes: 99,
  },
  {
    name: "PT not followed by a number: 500",
    url: "rpc/raise_bad_pt",
    status: 500,
    json: err("PT40A", "Wrong"),
    bytes: 61,
  },
  ...[1, 2, 3].map((n): WireCase => ({
    name: `response.headers of a wrong shape (${n}): 500 PGRST111`,
    url: `rpc/bad_guc_headers_${n}`,
    status: 500,
    json: err(
      "PGRST111",
      "response.headers guc must be a JSON array composed of objects with a single key and a string value",
    ),
  })),
  {
    name: "response.headers of a wrong shape on POST",
    method: "POST",
    url: "rpc/bad_guc_headers_1",
    body: "{}",
    status: 500,
    json: err(
      "PGRST111",
      "response.headers guc must be a JSON array composed of objects with a single key and a string value",
    ),
    bytes: 157,
  },
  {
    name: "an invalid response.status: 500 PGRST112",
    url: "rpc/send_bad_status",
    status: 500,
    json: err("PGRST112", "response.status guc must be a valid status code"),
    bytes: 106,
  },
  {
    name: "a JSON body for a single named json parameter",
    method: "POST",
    url: "rpc/named_json_param",
    body: '{"A": 1, "B": 2, "C": 3}',
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.named_json_param(A, B, C) in the schema cache",
      "Searched for the function public.named_json_param with parameters A, B, C or with a single unnamed json/jsonb parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "text/plain with no single unnamed text parameter",
    method: "POST",
    url: "rpc/unnamed_int_param",
    headers: { "content-type": "text/plain" },
    body: "a simple text",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.unnamed_int_param in the schema cache",
      "Searched for the function public.unnamed_int_param with a single unnamed text parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "text/xml with no single unnamed xml parameter",
    method: "POST",
    url: "rpc/unnamed_int_param",
    headers: { "content-type": "text/xml" },
    body: "a simple text",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.unnamed_int_param in the schema cache",
      "Searched for the function public.unnamed_int_param with a single unnamed xml parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "application/octet-stream with no single unnamed bytea parameter",
    method: "POST",
    url: "rpc/unnamed_int_param",
    headers: { "content-type": "application/octet-stream" },
    body: "\x89PNG",
    status: 404,
    json: err(
      "PGRST202",
      "Could not find the function public.unnamed_int_param in the schema cache",
      "Searched for the function public.unnamed_int_param with a single unnamed bytea parameter, but no matches were found in the schema cache.",
    ),
  },
  {
    name: "json and jsonb unnamed overloads: 300 PGRST203",
    method: "POST",
    url: "rpc/overloaded_unnamed_json_jsonb_param",
    body: '{"A": 1, "B": 2, "C": 3}',
    status: 300,
    json: err(
      "PGRST203",
      "Could not choose the best candidate function between: public.overloaded_unnamed_json_jsonb_param( => json), " +
        "public.overloaded_unnamed_json_jsonb_param( => jsonb)",
      null,
      "Try renaming the parameters or the function itself in the database so function overloading can be resolved",
    ),
  },
];

const PGRST201 = (parent: string, target: string, details: unknown[], hints: string[]) =>
  err(
    "PGRST201",
    `Could not embed because more than one relationship was found for '${parent}' and '${target}'`,
    details,
    `Try changing '${target}' to one of the following: ${
      hints.map((h) => `'${target}!${h}'`).join(", ")
    }. Find the desired relationship in the 'details' key.`,
  );

/** test/spec/Feature/Query/EmbedDisambiguationSpec.hs */
const EMBED_DISAMBIGUATION_SPEC: WireCase[] = [
  {
    name: "many-to-one and many-to-many (through a table and a view) to one table: 300",
    url: "sites?select=*,big_projects(*)",
    status: 300,
    json: PGRST201("sites", "big_projects", [
      {
        cardinality: "many-to-one",
        relationship: "main_project using sites(main_project_id) and big_projects(big_project_id)",
        embedding: "sites with big_projects",
      },
      {
        cardinality: "many-to-many",
        relationship: "jobs using jobs_site_id_fkey(site_id) and jobs_big_project_id_fkey(big_project_id)",
        embedding: "sites with big_projects",
      },
      {
        cardinality: "many-to-many",
        relationship:
          "main_jobs using jobs_site_id_fkey(site_id) and jobs_big_project_id_fkey(big_project_id)",
        embedding: "sites with big_projects",
      },
    ], ["main_project", "jobs", "main_jobs"]),
    expect: { "content-type": JSON_TYPE },
    bytes: 828,
  },
  {
    name: "a circular reference: 300",
    url: "agents?select=*,departments(*)",
    status: 300,
    json: PGRST201("agents", "departments", [
      {
        cardinality: "one-to-many",
        relationship: "departments_head_id_fkey using agents(id) and departments(head_id)",
        embedding: "agents with departments",
      },
      {
        cardinality: "many-to-one",
        relationship: "agents_department_id_fkey using agents(department_id) and departments(id)",
        embedding: "agents with departments",
      },
    ], ["departments_head_id_fkey", "agents_department_id_fkey"]),
  },
  {
    name: "two one-to-one relationships: 300",
    url: "first?select=second(*)",
    status: 300,
    json: PGRST201("first", "second", [
      {
        cardinality: "one-to-one",
        embedding: "first with second",
        relationship: "first_second_id_1_fkey using first(second_id_1) and second(id)",
      },
      {
        cardinality: "one-to-one",
        embedding: "first with second",
        relationship: "first_second_id_2_fkey using first(second_id_2) and second(id)",
      },
    ], ["first_second_id_1_fkey", "first_second_id_2_fkey"]),
  },
  {
    name: "a view embedded by a hint, and its parent by the FK's name",
    url: "tasks?id=eq.1&select=id,name,projects_view!project(id,name,client(id,name))",
    status: 200,
    json: [{
      id: 1,
      name: "Design w7",
      projects_view: { id: 1, name: "Windows 7", client: { id: 1, name: "Microsoft" } },
    }],
  },
  {
    name: "embed by the FK's name",
    url: "projects?id=in.(1,3)&select=id,name,client(id,name)",
    status: 200,
    json: [
      { id: 1, name: "Windows 7", client: { id: 1, name: "Microsoft" } },
      { id: 3, name: "IOS", client: { id: 2, name: "Apple" } },
    ],
  },
  {
    name: "embed by the FK's name beside the FK column",
    url: "projects?id=in.(1,3)&select=id,name,client_id,client(id,name)",
    status: 200,
    json: [
      { id: 1, name: "Windows 7", client_id: 1, client: { id: 1, name: "Microsoft" } },
      { id: 3, name: "IOS", client_id: 2, client: { id: 2, name: "Apple" } },
    ],
  },
];

const PGRST105 = err("PGRST105", "Filters must include all and only primary key columns with 'eq' operators");
const susan = '[{"first_name": "Susan", "last_name": "Heidt", "salary": "48000", "company": "GEX", ' +
  '"occupation": "Railroad engineer"}]';

/** test/spec/Feature/Query/UpsertSpec.hs (PUT restrictions) */
const UPSERT_SPEC: WireCase[] = [
  ...["limit=1", "offset=1"].map((param): WireCase => ({
    name: `PUT with ${param}: 400 PGRST114`,
    method: "PUT",
    url: `tiobe_pls?name=eq.Javascript&${param}`,
    body: '[{"name": "Javascript", "rank": 1}]',
    status: 400,
    json: err("PGRST114", "limit/offset querystring parameters are not allowed for PUT"),
    expect: { "content-type": JSON_TYPE },
  })),
  ...["rank=eq.19", "id=not.eq.Java", "id=in.(Go)", "and=(id.eq.Go)"].map((filter): WireCase => ({
    name: `PUT filtered by ${filter}: 405 PGRST105`,
    method: "PUT",
    url: `tiobe_pls?${filter}`,
    body: '[{"name": "Go", "rank": 19}]',
    status: 405,
    json: PGRST105,
  })),
  ...["first_name=eq.Susan", "last_name=eq.Heidt"].map((filter): WireCase => ({
    name: `PUT filtered by part of a composite key (${filter}): 405`,
    method: "PUT",
    url: `employees?${filter}`,
    body: susan,
    status: 405,
    json: PGRST105,
  })),
  {
    name: "PUT whose payload key differs from the URL's: 400 PGRST115",
    method: "PUT",
    url: "tiobe_pls?name=eq.MATLAB",
    body: '[{"name": "Perl", "rank": 17}]',
    status: 400,
    json: err("PGRST115", "Payload values do not match URL in primary key column(s)"),
  },
  {
    name: "PUT whose composite payload key differs: 400 PGRST115",
    method: "PUT",
    url: "employees?first_name=eq.Wendy&last_name=eq.Anderson",
    body: susan,
    status: 400,
    json: err("PGRST115", "Payload values do not match URL in primary key column(s)"),
  },
  {
    name: "PUT on a table without a key: 405",
    method: "PUT",
    url: "no_pk?a=eq.one&b=eq.two",
    body: '[{"a": "one", "b": "two"}]',
    status: 405,
    json: PGRST105,
  },
];

const PGRST122 = (prefs: string) =>
  err("PGRST122", "Invalid preferences given with handling=strict", `Invalid preferences: ${prefs}`);
const organization = '{"id":7,"name":"John","referee":null,"auditor":null,"manager_id":6}';

/** test/spec/Feature/Query/Preferences/HandlingSpec.hs */
const HANDLING_SPEC: WireCase[] = [
  {
    name: "handling=strict with an invalid preference",
    url: "items",
    headers: { prefer: "handling=strict, anything" },
    status: 400,
    json: PGRST122("anything"),
  },
  {
    name: "handling=strict with invalid preferences in a second header",
    url: "items",
    headers: { prefer: "handling=strict, something, else" },
    status: 400,
    json: PGRST122("something, else"),
  },
  {
    name: "handling=strict on POST",
    method: "POST",
    url: "organizations?select=*",
    headers: { prefer: "return=representation, handling=strict, anything" },
    body: organization,
    status: 400,
    json: PGRST122("anything"),
  },
  {
    name: "handling=strict on a call",
    method: "POST",
    url: "rpc/overloaded_unnamed_param",
    headers: { prefer: "handling=strict, anything" },
    body: "{}",
    status: 400,
    json: PGRST122("anything"),
  },
  { name: "handling=lenient", url: "items", headers: { prefer: "handling=lenient, anything" }, status: 200 },
  {
    name: "handling=lenient on POST",
    method: "POST",
    url: "organizations?select=*",
    headers: { prefer: "return=representation, handling=lenient, anything, tx=rollback" },
    body: organization,
    status: 201,
    json: [JSON.parse(organization)],
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "handling=lenient on a call",
    method: "POST",
    url: "rpc/overloaded_unnamed_param",
    headers: { prefer: "handling=lenient, anything" },
    body: "{}",
    status: 200,
    json: 1,
    expect: { "content-type": JSON_TYPE },
  },
];

const animal = (n: number) =>
  `{"integer": ${n}, "double": 3.14159, "varchar": "testing!", "boolean": false, "date": "1900-01-01", ` +
  `"money": "$3.99", "enum": "foo"}`;

/** test/spec/Feature/Query/InsertSpec.hs: successful inserts and their headers (they commit: after the reads) */
const INSERT_SPEC: WireCase[] = [
  {
    name: "disparate JSON types: 201, no body",
    method: "POST",
    url: "menagerie",
    body: animal(13),
    status: 201,
    text: "",
    expect: { "content-type": null },
  },
  {
    name: "select= on the representation",
    method: "POST",
    url: "menagerie?select=integer,varchar",
    headers: { prefer: "return=representation" },
    body: `[${animal(14)}]`,
    status: 201,
    json: [{ integer: 14, varchar: "testing!" }],
    expect: { "content-type": JSON_TYPE, "preference-applied": "return=representation" },
    bytes: 37,
  },
  {
    name: "select= without return=: ignored",
    method: "POST",
    url: "menagerie?select=integer,varchar",
    body: `[${animal(15)}]`,
    status: 201,
    text: "",
    expect: { "content-type": null },
  },
  {
    name: "select= with return=minimal: ignored",
    method: "POST",
    url: "menagerie?select=integer,varchar",
    headers: { prefer: "return=minimal" },
    body: `[${animal(16)}]`,
    status: 201,
    text: "",
    expect: { "content-type": null, "preference-applied": "return=minimal" },
  },
  {
    name: "a representation with an embed and count=exact",
    method: "POST",
    url: "projects?select=id,name,clients(id,name)",
    headers: { prefer: "return=representation, count=exact" },
    body: '{"id":6,"name":"New Project","client_id":2}',
    status: 201,
    json: [{ id: 6, name: "New Project", clients: { id: 2, name: "Apple" } }],
    expect: {
      "content-type": JSON_TYPE,
      location: null,
      "content-range": "*/1",
      "preference-applied": "return=representation, count=exact",
    },
  },
  {
    name: "renamed and cast columns",
    method: "POST",
    url: "projects?select=pId:id::text,pName:name,cId:client_id::text",
    headers: { prefer: "return=representation" },
    body: '{"id":7,"name":"New Project","client_id":2}',
    status: 201,
    json: [{ pId: "7", pName: "New Project", cId: "2" }],
    expect: { location: null, "content-range": "*/*", "preference-applied": "return=representation" },
  },
  {
    name: "a representation without the key: no Location",
    method: "POST",
    url: "projects?select=name,client_id",
    headers: { prefer: "return=representation" },
    body: '{"id":10,"name":"New Project","client_id":2}',
    status: 201,
    json: [{ name: "New Project", client_id: 2 }],
    expect: { location: null, "content-range": "*/*", "preference-applied": "return=representation" },
  },
  {
    name: "headers-only: Location from the key, whatever select=",
    method: "POST",
    url: "projects?select=name,client_id",
    headers: { prefer: "return=headers-only" },
    body: '{"id":11,"name":"New Project","client_id":2}',
    status: 201,
    text: "",
    expect: {
      "content-type": null,
      location: "/projects?id=eq.11",
      "content-range": "*/*",
      "preference-applied": "return=headers-only",
    },
  },
  {
    name: "no return=: no Location",
    method: "POST",
    url: "projects?select=name,client_id",
    body: '{"id":12,"name":"New Project","client_id":2}',
    status: 201,
    text: "",
    expect: { "content-type": null, location: null },
  },
  {
    name: "a form",
    method: "POST",
    url: "menagerie",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "integer=7&double=2.71828&varchar=forms+are+fun&boolean=false&date=1900-01-01&money=$3.99&enum=foo",
    status: 201,
    text: "",
    expect: { "content-type": null },
  },
  {
    name: "headers-only on a serial key: Location",
    method: "POST",
    url: "auto_incrementing_pk",
    headers: { prefer: "return=headers-only" },
    body: '{"non_nullable_string":"not null"}',
    status: 201,
    text: "",
    expect: {
      "content-type": null,
      location: "/auto_incrementing_pk?id=eq.2",
      "preference-applied": "return=headers-only",
    },
  },
  {
    name: "a table without a key: 201, no Location",
    method: "POST",
    url: "no_pk",
    body: '{"a":"foo", "b":"bar"}',
    status: 201,
    expect: { "content-type": null, location: null },
  },
  {
    name: "a table without a key, return=representation",
    method: "POST",
    url: "no_pk",
    headers: { prefer: "return=representation" },
    body: '{"a":"bar", "b":"baz"}',
    status: 201,
    json: [{ a: "bar", b: "baz" }],
    expect: { location: null, "preference-applied": "return=representation" },
  },
  {
    name: "no rows, return=representation: []",
    method: "POST",
    url: "no_pk",
    headers: { prefer: "return=representation" },
    body: "[]",
    status: 201,
    json: [],
  },
  {
    name: "nulls",
    method: "POST",
    url: "no_pk",
    headers: { prefer: "return=representation" },
    body: '{"a":null, "b":"foo"}',
    status: 201,
    json: [{ a: null, b: "foo" }],
    expect: { location: null },
  },
  {
    name: "a compound key, return=representation: no Location",
    method: "POST",
    url: "compound_pk",
    headers: { prefer: "return=representation" },
    body: '{"k1":12, "k2":"Rock & R+ll"}',
    status: 201,
    json: [{ k1: 12, k2: "Rock & R+ll", extra: null }],
    expect: { location: null },
  },
  {
    name: "into a view: 201, no Location",
    method: "POST",
    url: "compound_pk_view",
    headers: { prefer: "tx=rollback" },
    body: '{"k1":1,"k2":"test","extra":2}',
    status: 201,
    text: "",
    expect: { "content-type": null, location: null },
  },
  {
    name: "into a view of two tables, headers-only: Location with both keys",
    method: "POST",
    url: "with_multiple_pks",
    headers: { prefer: "return=headers-only" },
    body: '{"pk1":1,"pk2":2}',
    status: 201,
    text: "",
    expect: {
      "content-type": null,
      location: "/with_multiple_pks?pk1=eq.1&pk2=eq.2",
      "content-range": "*/*",
      "preference-applied": "return=headers-only",
    },
  },
  {
    name: "into a view, headers-only: Location with the composite key",
    method: "POST",
    url: "compound_pk_view",
    headers: { prefer: "return=headers-only" },
    body: '{"k1":1,"k2":"test","extra":2}',
    status: 201,
    text: "",
    expect: {
      "content-type": null,
      location: "/compound_pk_view?k1=eq.1&k2=eq.test",
      "content-range": "*/*",
      "preference-applied": "return=headers-only",
    },
  },
  {
    name: "a bulk insert: no Location",
    method: "POST",
    url: "compound_pk",
    body: '[{"k1":21, "k2":"hello world"}, {"k1":22, "k2":"bye for now"}]',
    status: 201,
    text: "",
    expect: { "content-type": null, location: null },
  },
];

const PGRST124 = (n: number) =>
  err("PGRST124", "Query result exceeds max-affected preference constraint", `The query affects ${n} rows`);

/** test/spec/Feature/Query/Preferences/MaxAffectedSpec.hs; last, as its successful writes commit. */
const MAX_AFFECTED_SPEC: WireCase[] = [
  {
    name: "DELETE of 14 rows, max-affected=10: 400",
    method: "DELETE",
    url: "items?id=lt.15",
    headers: { prefer: "handling=strict, max-affected=10" },
    status: 400,
    json: PGRST124(14),
  },
  {
    name: "PATCH of 1 row, max-affected=0: 400",
    method: "PATCH",
    url: "tiobe_pls?name=eq.Java",
    headers: { prefer: "handling=strict, max-affected=0" },
    body: '[{"name":"Java", "rank":19}]',
    status: 400,
    json: PGRST124(1),
  },
  ...["setof", "table"].map((kind): WireCase => ({
    name: `a function returning ${kind} that deletes 15 rows, max-affected=10: 400`,
    method: "POST",
    url: `rpc/delete_items_returns_${kind}`,
    headers: { prefer: "handling=strict, max-affected=10" },
    body: "",
    status: 400,
    json: PGRST124(15),
  })),
  ...["setof", "table"].map((kind): WireCase => ({
    name: `a function returning ${kind} that deletes 15 rows, max-affected=20: 200`,
    method: "POST",
    url: `rpc/delete_items_returns_${kind}`,
    headers: { prefer: "handling=strict, max-affected=20, tx=rollback" },
    body: "",
    status: 200,
    json: ids(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
  })),
  {
    name: "a void function with max-affected: 400 PGRST128",
    method: "POST",
    url: "rpc/delete_items_returns_void",
    headers: { prefer: "handling=strict, max-affected=20" },
    body: "",
    status: 400,
    json: err(
      "PGRST128",
      "Function must return SETOF or TABLE when max-affected preference is used with handling=strict",
    ),
  },
  {
    name: "DELETE of 9 rows, max-affected=10: 204",
    method: "DELETE",
    url: "items?id=lt.10",
    headers: { prefer: "handling=strict, max-affected=10" },
    status: 204,
    text: "",
    expect: { "preference-applied": "handling=strict, max-affected=10" },
  },
  {
    name: "DELETE of 1 row, max-affected=1: 204",
    method: "DELETE",
    url: "tiobe_pls?name=eq.Java",
    headers: { prefer: "handling=strict, max-affected=1" },
    body: '[{"name":"Java", "rank":19}]',
    status: 204,
    text: "",
    expect: { "preference-applied": "handling=strict, max-affected=1" },
  },
  {
    name: "handling=lenient ignores max-affected on DELETE",
    method: "DELETE",
    url: "items?id=lt.15",
    headers: { prefer: "handling=lenient, max-affected=10" },
    status: 204,
    text: "",
    expect: { "preference-applied": "handling=lenient" },
  },
  {
    name: "handling=lenient ignores max-affected on PATCH",
    method: "PATCH",
    url: "tiobe_pls?name=eq.C",
    headers: { prefer: "handling=lenient, max-affected=0" },
    body: '[{"name":"C", "rank":19}]',
    status: 204,
    text: "",
    expect: { "preference-applied": "handling=lenient" },
  },
];

/** test/spec/Feature/Query/RpcSpec.hs: OUT, INOUT and TABLE results */
const RPC_RESULT_SPEC: WireCase[] = [
  {
    name: "one OUT parameter: an object",
    url: "rpc/single_out_param?num=5",
    status: 200,
    json: { num_plus_one: 6 },
  },
  {
    name: "one json OUT parameter: an object",
    url: "rpc/single_json_out_param?a=1&b=two",
    status: 200,
    json: { my_json: { a: 1, b: "two" } },
  },
  {
    name: "one INOUT parameter: an object",
    url: "rpc/single_inout_param?num=2",
    status: 200,
    json: { num: 3 },
  },
  {
    name: "several OUT parameters",
    url: "rpc/many_out_params",
    status: 200,
    json: { my_json: { a: 1, b: "two" }, num: 3, str: "four" },
  },
  {
    name: "several INOUT parameters",
    url: "rpc/many_inout_params?num=1&str=two&b=false",
    status: 200,
    json: { num: 1, str: "two", b: false },
  },
  {
    name: "a one-column TABLE: objects",
    url: "rpc/single_column_table_return",
    status: 200,
    json: [{ a: "A" }],
  },
  {
    name: "a two-column TABLE",
    url: "rpc/multi_column_table_return",
    status: 200,
    json: [{ a: "A", b: "B" }],
  },
];

const tsv = (...vectors: string[]) => vectors.map((text_search_vector) => ({ text_search_vector }));
const IMPOSSIBLE = "'fun':5 'imposs':9 'kind':3";
const POSSIBLE = "'also':2 'fun':3 'possibl':8";
const RATS = "'ate':3 'cat':2 'fat':1 'rat':4";
const FRENCH = "'amus':5 'fair':7 'impossibl':9 'peu':4";
const GERMAN = "'art':4 'spass':5 'unmog':7";

/** test/spec/Feature/Query/QuerySpec.hs: the full-text search operators on a tsvector column */
const FTS_SPEC: WireCase[] = [
  { name: "fts", url: "tsearch?text_search_vector=fts.impossible", status: 200, json: tsv(IMPOSSIBLE) },
  {
    name: "fts with &",
    url: "tsearch?text_search_vector=fts.fun%26possible",
    status: 200,
    json: tsv(POSSIBLE),
  },
  {
    name: "fts with |",
    url: "tsearch?text_search_vector=fts.impossible%7Cpossible",
    status: 200,
    json: tsv(IMPOSSIBLE, POSSIBLE),
  },
  {
    name: "fts with & !",
    url: "tsearch?text_search_vector=fts.fun%26!possible",
    status: 200,
    json: tsv(IMPOSSIBLE),
  },
  { name: "plfts", url: "tsearch?text_search_vector=plfts.The%20Fat%20Rats", status: 200, json: tsv(RATS) },
  { name: "wfts", url: "tsearch?text_search_vector=wfts.The%20Fat%20Rats", status: 200, json: tsv(RATS) },
  {
    name: "wfts with and",
    url: "tsearch?text_search_vector=wfts.fun%20and%20possible",
    status: 200,
    json: tsv(POSSIBLE),
  },
  {
    name: "wfts with or",
    url: "tsearch?text_search_vector=wfts.impossible%20or%20possible",
    status: 200,
    json: tsv(IMPOSSIBLE, POSSIBLE),
  },
  {
    name: "wfts with and -",
    url: "tsearch?text_search_vector=wfts.fun%20and%20-possible",
    status: 200,
    json: tsv(IMPOSSIBLE),
  },
  {
    name: "fts(french)",
    url: "tsearch?text_search_vector=fts(french).amusant",
    status: 200,
    json: tsv(FRENCH),
  },
  {
    name: "plfts(french)",
    url: "tsearch?text_search_vector=plfts(french).amusant%20impossible",
    status: 200,
    json: tsv(FRENCH),
  },
  {
    name: "wfts(french)",
    url: "tsearch?text_search_vector=wfts(french).amusant%20impossible",
    status: 200,
    json: tsv(FRENCH),
  },
  {
    name: "not.fts",
    url: "tsearch?text_search_vector=not.fts.impossible%7Cfat%7Cfun",
    status: 200,
    json: tsv(FRENCH, GERMAN),
  },
  {
    name: "not.fts(english)",
    url: "tsearch?text_search_vector=not.fts(english).impossible%7Cfat%7Cfun",
    status: 200,
    json: tsv(FRENCH, GERMAN),
  },
  {
    name: "not.plfts",
    url: "tsearch?text_search_vector=not.plfts.The%20Fat%20Rats",
    status: 200,
    json: tsv(IMPOSSIBLE, POSSIBLE, FRENCH, GERMAN),
  },
  {
    name: "not.wfts(english)",
    url: "tsearch?text_search_vector=not.wfts(english).impossible%20or%20fat%20or%20fun",
    status: 200,
    json: tsv(FRENCH, GERMAN),
  },
  { name: "phfts", url: "tsearch?text_search_vector=phfts.The%20Fat%20Cats", status: 200, json: tsv(RATS) },
  {
    name: "phfts(german)",
    url: "tsearch?text_search_vector=phfts(german).Art%20Spass",
    status: 200,
    json: tsv(GERMAN),
  },
  {
    name: "not.phfts(english)",
    url: "tsearch?text_search_vector=not.phfts(english).The%20Fat%20Cats",
    status: 200,
    json: tsv(IMPOSSIBLE, POSSIBLE, FRENCH, GERMAN),
  },
  {
    name: "phfts in or",
    url:
      "tsearch?or=(text_search_vector.phfts(german).Art%20Spass, text_search_vector.phfts(french).amusant, " +
      "text_search_vector.fts(english).impossible)",
    status: 200,
    json: tsv(IMPOSSIBLE, FRENCH, GERMAN),
  },
  {
    name: "plfts in or (AndOrParamsSpec)",
    url: "tsearch?or=(text_search_vector.plfts(german).Art%20Spass, " +
      "text_search_vector.plfts(french).amusant%20impossible, text_search_vector.fts(english).impossible)",
    status: 200,
    json: tsv(IMPOSSIBLE, FRENCH, GERMAN),
  },
  {
    name: "not.wfts in or (AndOrParamsSpec)",
    url: "tsearch?or=(text_search_vector.plfts(german).Art,text_search_vector.plfts(french).amusant," +
      "text_search_vector.not.wfts(english).impossible)",
    status: 200,
    json: tsv(POSSIBLE, RATS, FRENCH, GERMAN),
  },
];

const PGRST118 = (parent: string, name: string) =>
  err(
    "PGRST118",
    `A related order on '${name}' is not possible`,
    `'${parent}' and '${name}' do not form a many-to-one or one-to-one relationship`,
  );

/** test/spec/Feature/Query/RelatedQueriesSpec.hs (related orders) */
const PROJECTS_WITH_CLIENTS = [
  { name: "Windows 7", clients: { name: "Microsoft" } },
  { name: "Windows 10", clients: { name: "Microsoft" } },
  { name: "IOS", clients: { name: "Apple" } },
  { name: "OSX", clients: { name: "Apple" } },
];

const RELATED_QUERIES_SPEC: WireCase[] = [
  // "works with count=planned / count=estimated". The spec's `0-3/5` for `clients=not.is.null` is its planner's
  // estimate for its statement (and, for `estimated`, the greater of that and the count: that config has no
  // max-rows). The platform's statement differs, and so does the planner's guess for it (2 on PGlite): that
  // planned case is left out. `estimated` under the platform's row cap counts exactly, as PostgREST with
  // max-rows does.
  {
    name: "works with count=estimated: not.is.null (counted under the row cap)",
    url: "projects?select=name,clients(name)&clients=not.is.null",
    headers: { prefer: "count=estimated" },
    status: 200,
    json: PROJECTS_WITH_CLIENTS,
    expect: { "content-type": JSON_TYPE, "content-range": "0-3/4" },
  },
  ...(["planned", "estimated"] as const).map((count): WireCase => ({
    name: `works with count=${count}: is.null`,
    url: "projects?select=name,clients()&clients=is.null",
    headers: { prefer: `count=${count}` },
    status: 200,
    json: [{ name: "Orphan" }],
    expect: { "content-type": JSON_TYPE, "content-range": "0-0/1" },
  })),
  {
    name: "order by a many-to-one's column, nulls first",
    url: "projects?select=id,clients(name)&order=clients(name).nullsfirst",
    status: 200,
    json: [
      { id: 5, clients: null },
      { id: 3, clients: { name: "Apple" } },
      { id: 4, clients: { name: "Apple" } },
      { id: 1, clients: { name: "Microsoft" } },
      { id: 2, clients: { name: "Microsoft" } },
    ],
  },
  {
    name: "order by an aliased many-to-one's column",
    url: "projects?select=id,client:clients(name)&order=client(name).asc",
    status: 200,
    json: [
      { id: 3, client: { name: "Apple" } },
      { id: 4, client: { name: "Apple" } },
      { id: 1, client: { name: "Microsoft" } },
      { id: 2, client: { name: "Microsoft" } },
      { id: 5, client: null },
    ],
  },
  {
    name: "a related order inside an embed",
    url: "users?select=name,tasks(id,name,projects(id,name))&tasks.order=projects(id).desc,name&limit=1",
    status: 200,
    json: [{
      name: "Angela Martin",
      tasks: [
        { id: 4, name: "Code w10", projects: { id: 2, name: "Windows 10" } },
        { id: 3, name: "Design w10", projects: { id: 2, name: "Windows 10" } },
        { id: 2, name: "Code w7", projects: { id: 1, name: "Windows 7" } },
        { id: 1, name: "Design w7", projects: { id: 1, name: "Windows 7" } },
      ],
    }],
  },
  {
    name: "a related order on a one-to-many: 400 PGRST118",
    url: "clients?select=*,projects(*)&order=projects(id)",
    status: 400,
    json: PGRST118("clients", "projects"),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "a related order on an aliased one-to-many: 400 PGRST118",
    url: "clients?select=*,pros:projects(*)&order=pros(id)",
    status: 400,
    json: PGRST118("clients", "pros"),
  },
  {
    name: "a related order on a resource not embedded: 400 PGRST108",
    url: "projects?select=id,clients(name)&order=clientsx(name).nullsfirst",
    status: 400,
    json: err(
      "PGRST108",
      "'clientsx' is not an embedded resource in this request",
      null,
      "Verify that 'clientsx' is included in the 'select' query parameter.",
    ),
  },
];

const ALL = "OPTIONS,GET,HEAD,POST,PUT,PATCH,DELETE";
const options = (url: string, allow: string): WireCase => ({
  name: `OPTIONS /${url}: ${allow}`,
  method: "OPTIONS",
  url,
  status: 200,
  expect: { allow },
});

/** test/spec/Feature/OptionsSpec.hs */
const OPTIONS_SPEC: WireCase[] = [
  { ...options("items", ALL), bytes: 0 },
  { name: "OPTIONS on an unknown table: 404", method: "OPTIONS", url: "unknown", status: 404 },
  options("projects_auto_updatable_view_with_pk", ALL),
  options("projects_auto_updatable_view_without_pk", "OPTIONS,GET,HEAD,POST,PATCH,DELETE"),
  options("projects_view_with_all_triggers_with_pk", ALL),
  options("projects_view_without_triggers", "OPTIONS,GET,HEAD"),
  options("projects_view_with_all_triggers_without_pk", "OPTIONS,GET,HEAD,POST,PATCH,DELETE"),
  options("projects_view_with_insert_trigger", "OPTIONS,GET,HEAD,POST"),
  options("projects_view_with_update_trigger", "OPTIONS,GET,HEAD,PATCH"),
  options("projects_view_with_delete_trigger", "OPTIONS,GET,HEAD,DELETE"),
  options("rpc/delete_items_returns_void", "OPTIONS,POST"),
  options("rpc/getallusers", "OPTIONS,GET,HEAD,POST"),
  // The spec's immutable jwt_test takes no argument; sayhello takes one, which OPTIONS resolves as a GET would.
  options("rpc/sayhello?name=x", "OPTIONS,GET,HEAD,POST"),
  options("", "OPTIONS,GET,HEAD"),
];

/** test/spec/Feature/CorsSpec.hs (the default config: every origin) */
const CORS_SPEC: WireCase[] = [
  {
    name: "replies naively and permissively to preflight request",
    method: "OPTIONS",
    url: "",
    headers: {
      accept: "*/*",
      origin: "http://example.com",
      "access-control-request-method": "POST",
      "access-control-request-headers": "Foo,Bar",
    },
    status: 200,
    bytes: 0,
    expect: {
      "access-control-allow-origin": "*",
      "access-control-allow-methods": "GET, POST, PATCH, PUT, DELETE, OPTIONS, HEAD",
      "access-control-allow-headers": "Authorization, Foo, Bar, Accept, Accept-Language, Content-Language",
      "access-control-max-age": "86400",
    },
  },
  {
    name: "exposes necesssary response headers to regular request",
    url: "items",
    headers: { origin: "http://example.com" },
    status: 200,
    expect: {
      "access-control-expose-headers": "Content-Encoding, Content-Location, Content-Range, Content-Type, " +
        "Date, Location, Server, Transfer-Encoding, Range-Unit",
    },
  },
  {
    name: "allows INFO body through even with CORS request headers present to postflight request",
    method: "OPTIONS",
    url: "items",
    headers: {
      origin: "http://localhost:8000",
      accept: "text/csv, */*; q=0.01",
      "accept-language": "en-US,en;q=0.5",
      referer: "http://localhost:8000/",
    },
    status: 200,
    expect: { "access-control-allow-origin": "*", allow: ALL },
  },
  {
    name: "allows INFO body through: OPTIONS without an Origin still allows every origin",
    method: "OPTIONS",
    url: "items",
    headers: { accept: "application/json" },
    status: 200,
    expect: { "access-control-allow-origin": "*", allow: ALL },
  },
];

const ARRAY_STRIP = "application/vnd.pgrst.array+json;nulls=stripped";
const OBJECT_STRIP = "application/vnd.pgrst.object+json;nulls=stripped";
const ORGANIZATIONS_STRIPPED = [
  { id: 1, name: "Referee Org", manager_id: 1 },
  { id: 2, name: "Auditor Org", manager_id: 2 },
  { id: 3, name: "Acme", referee: 1, auditor: 2, manager_id: 3 },
  { id: 4, name: "Umbrella", referee: 1, auditor: 2, manager_id: 4 },
  { id: 5, name: "Cyberdyne", referee: 3, auditor: 4, manager_id: 5 },
  { id: 6, name: "Oscorp", referee: 3, auditor: 4, manager_id: 6 },
];

/** test/spec/Feature/Query/NullsStripSpec.hs (its writes rolled back here) */
const NULLS_STRIP_SPEC: WireCase[] = [
  {
    name: "array, nulls=stripped",
    url: "organizations?select=*",
    headers: { accept: ARRAY_STRIP },
    status: 200,
    json: ORGANIZATIONS_STRIPPED,
    expect: { "content-type": `${ARRAY_STRIP}; charset=utf-8` },
  },
  {
    name: "POST, array, nulls=stripped",
    method: "POST",
    url: "organizations?select=*",
    headers: { accept: ARRAY_STRIP, prefer: "return=representation, tx=rollback" },
    body: organization,
    status: 201,
    json: [{ id: 7, name: "John", manager_id: 6 }],
    expect: { "content-type": `${ARRAY_STRIP}; charset=utf-8` },
  },
  {
    name: "PATCH, array, nulls=stripped",
    method: "PATCH",
    url: "organizations?id=eq.3&select=*",
    headers: { accept: ARRAY_STRIP, prefer: "return=representation, tx=rollback" },
    body: '{"name":"John","referee":null}',
    status: 200,
    json: [{ id: 3, name: "John", auditor: 2, manager_id: 3 }],
    expect: { "content-type": `${ARRAY_STRIP}; charset=utf-8` },
  },
  {
    name: "vnd.pgrst.array without +json, nulls=stripped",
    url: "organizations?select=*",
    headers: { accept: "application/vnd.pgrst.array;nulls=stripped" },
    status: 200,
    json: ORGANIZATIONS_STRIPPED,
    expect: { "content-type": `${ARRAY_STRIP}; charset=utf-8` },
  },
  {
    name: "object, nulls=stripped",
    url: "organizations?limit=1",
    headers: { accept: OBJECT_STRIP },
    status: 200,
    json: { id: 1, name: "Referee Org", manager_id: 1 },
    expect: { "content-type": `${OBJECT_STRIP}; charset=utf-8` },
  },
  {
    name: "object, nulls=stripped, six rows: 406",
    url: "organizations?select=*",
    headers: { accept: OBJECT_STRIP },
    status: 406,
    json: coerce(6),
    expect: { "content-type": JSON_TYPE },
  },
  {
    name: "nulls stripped even when selected",
    url: "organizations?select=id,referee,auditor",
    headers: { accept: ARRAY_STRIP },
    status: 200,
    json: [
      { id: 1 },
      { id: 2 },
      { id: 3, referee: 1, auditor: 2 },
      { id: 4, referee: 1, auditor: 2 },
      { id: 5, referee: 3, auditor: 4 },
      { id: 6, referee: 3, auditor: 4 },
    ],
  },
  {
    name: "POST, selected nulls stripped",
    method: "POST",
    url: "organizations?select=id,referee,auditor",
    headers: { accept: ARRAY_STRIP, prefer: "return=representation, tx=rollback" },
    body: organization,
    status: 201,
    json: [{ id: 7 }],
  },
  {
    name: "PATCH, selected nulls stripped",
    method: "PATCH",
    url: "organizations?id=eq.3&select=id,name,referee,auditor",
    headers: { accept: ARRAY_STRIP, prefer: "return=representation, tx=rollback" },
    body: '{"name":"John","referee":null}',
    status: 200,
    json: [{ id: 3, name: "John", auditor: 2 }],
  },
  {
    name: "object, selected nulls stripped",
    url: "organizations?select=id,referee,auditor&limit=1",
    headers: { accept: OBJECT_STRIP },
    status: 200,
    json: { id: 1 },
    expect: { "content-type": `${OBJECT_STRIP}; charset=utf-8` },
  },
  {
    name: "vnd.pgrst.array+json keeps nulls",
    url: "organizations?select=id,referee,auditor",
    headers: { accept: "application/vnd.pgrst.array+json" },
    status: 200,
    json: [
      { id: 1, referee: null, auditor: null },
      { id: 2, referee: null, auditor: null },
      { id: 3, referee: 1, auditor: 2 },
      { id: 4, referee: 1, auditor: 2 },
      { id: 5, referee: 3, auditor: 4 },
      { id: 6, referee: 3, auditor: 4 },
    ],
    expect: { "content-type": JSON_TYPE },
  },
];

const count = (url: string, range: string): WireCase => ({
  name: `HEAD ${url} with count=exact: ${range}`,
  method: "HEAD",
  url,
  headers: { prefer: "count=exact" },
  status: 200,
  text: "",
  expect: { "content-type": JSON_TYPE, "content-range": range },
});

/**
 * test/spec/Feature/Query/EmbedInnerJoinSpec.hs (many-to-one and one-to-many, on tables). Left out: two cases
 * whose rows come without `order=`; on PostgreSQL the `!inner` one-to-many is a hash semi-join here, whose row
 * order differs from the table's (PostgREST promises no order without `order=` either).
 */
const EMBED_INNER_JOIN_SPEC: WireCase[] = [
  {
    name: "!inner leaves out the rows without a parent",
    url: "projects?select=id,clients!inner(id)",
    status: 200,
    json: [
      { id: 1, clients: { id: 1 } },
      { id: 2, clients: { id: 1 } },
      { id: 3, clients: { id: 2 } },
      { id: 4, clients: { id: 2 } },
    ],
  },
  {
    name: "!left keeps them",
    url: "projects?select=id,clients!left(id)",
    status: 200,
    json: [
      { id: 1, clients: { id: 1 } },
      { id: 2, clients: { id: 1 } },
      { id: 3, clients: { id: 2 } },
      { id: 4, clients: { id: 2 } },
      { id: 5, clients: null },
    ],
  },
  count("projects?select=id,clients!inner(id)", "0-3/4"),
  {
    name: "!inner with a filter on the parent",
    url: "projects?select=id,clients!inner(id)&clients.id=eq.1",
    status: 200,
    json: [{ id: 1, clients: { id: 1 } }, { id: 2, clients: { id: 1 } }],
  },
  {
    name: "!inner with a filter matching nothing",
    url: "projects?select=id,clients!inner(id)&clients.id=eq.0",
    status: 200,
    json: [],
  },
  count("projects?select=id,clients!inner(id)&clients.id=eq.1", "0-1/2"),
  {
    name: "!inner two levels down",
    url: "tasks?select=id,projects!inner(id,clients!inner(id))&projects.clients.id=eq.2",
    status: 200,
    json: [
      { id: 5, projects: { id: 3, clients: { id: 2 } } },
      { id: 6, projects: { id: 3, clients: { id: 2 } } },
      { id: 7, projects: { id: 4, clients: { id: 2 } } },
      { id: 8, projects: { id: 4, clients: { id: 2 } } },
    ],
  },
  count("tasks?select=id,projects!inner(id,clients!inner(id))&projects.clients.id=eq.1", "0-3/4"),
  {
    name: "!inner below a left embed only empties that embed",
    url: "tasks?select=id,projects(id,clients!inner(id))&projects.clients.id=eq.2&order=id",
    status: 200,
    json: [
      { id: 1, projects: null },
      { id: 2, projects: null },
      { id: 3, projects: null },
      { id: 4, projects: null },
      { id: 5, projects: { id: 3, clients: { id: 2 } } },
      { id: 6, projects: { id: 3, clients: { id: 2 } } },
      { id: 7, projects: { id: 4, clients: { id: 2 } } },
      { id: 8, projects: { id: 4, clients: { id: 2 } } },
    ],
  },
  count("tasks?select=id,projects(id,clients!inner(id))&projects.clients.id=eq.2", "0-7/8"),
  count("entities?select=id,child_entities!inner(id)", "0-1/2"),
  {
    name: "!inner on a one-to-many, filtered",
    url: "entities?select=id,child_entities!inner(id)&child_entities.id=eq.3",
    status: 200,
    json: [{ id: 2, child_entities: ids(3) }],
  },
  {
    name: "!inner on a one-to-many, two levels down",
    url: "entities?select=id,child_entities!inner(id,grandchild_entities!inner(id))" +
      "&child_entities.grandchild_entities.id=in.(1,5)",
    status: 200,
    json: [{
      id: 1,
      child_entities: [{ id: 1, grandchild_entities: ids(1) }, { id: 2, grandchild_entities: ids(5) }],
    }],
  },
  count(
    "entities?select=id,child_entities!inner(id,grandchild_entities(id))&child_entities.grandchild_entities.id=eq.2",
    "0-1/2",
  ),
];

/** UTC: what an invalid timezone leaves the timestamps in. */
const IN_UTC = [
  { t: "2023-10-18T12:37:59.611+00:00" },
  { t: "2023-10-18T14:37:59.611+00:00" },
  { t: "2023-10-18T16:37:59.611+00:00" },
];

/** The timezone cases of v14's test/spec/Feature/Query/PreferencesSpec.hs (v16 moved them to TimezoneSpec.hs). */
const TIMEZONE_SPEC: WireCase[] = [
  {
    name: "timezone=America/Los_Angeles with handling=strict",
    url: "timestamps",
    headers: { prefer: "handling=strict, timezone=America/Los_Angeles" },
    status: 200,
    json: [
      { t: "2023-10-18T05:37:59.611-07:00" },
      { t: "2023-10-18T07:37:59.611-07:00" },
      { t: "2023-10-18T09:37:59.611-07:00" },
    ],
    expect: {
      "content-type": JSON_TYPE,
      "preference-applied": "handling=strict, timezone=America/Los_Angeles",
    },
  },
  {
    name: "timezone=America/Los_Angeles",
    url: "timestamps",
    headers: { prefer: "timezone=America/Los_Angeles" },
    status: 200,
    json: [
      { t: "2023-10-18T05:37:59.611-07:00" },
      { t: "2023-10-18T07:37:59.611-07:00" },
      { t: "2023-10-18T09:37:59.611-07:00" },
    ],
    expect: { "preference-applied": "timezone=America/Los_Angeles" },
  },
  {
    name: "an invalid timezone with handling=strict: 400 PGRST122",
    url: "timestamps",
    headers: { prefer: "handling=strict, timezone=Invalid/Timezone" },
    status: 400,
    json: err(
      "PGRST122",
      "Invalid preferences given with handling=strict",
      "Invalid preferences: timezone=Invalid/Timezone",
    ),
  },
  {
    name: "an invalid timezone without handling: the default zone",
    url: "timestamps",
    headers: { prefer: "timezone=Invalid/Timezone" },
    status: 200,
    json: IN_UTC,
    expect: { "preference-applied": null },
  },
  {
    name: "an invalid timezone with handling=lenient: the default zone",
    url: "timestamps",
    headers: { prefer: "handling=lenient, timezone=Invalid/Timezone" },
    status: 200,
    json: IN_UTC,
    expect: { "preference-applied": "handling=lenient" },
  },
  // Not in the spec: v14 takes only names `pg_timezone_names` lists, as spelt there (offsets came with v16).
  ...["timezone=+05:30", "timezone=-4", "timezone=america/los_angeles"].map((prefer): WireCase => ({
    name: `${prefer}: not a listed name, not applied`,
    url: "timestamps",
    headers: { prefer },
    status: 200,
    json: IN_UTC,
    expect: { "preference-applied": null },
  })),
];

/** test/spec/Feature/Query/UnicodeSpec.hs (the table in the exposed schema, not in a schema named تست) */
const UNICODE_SPEC: WireCase[] = [
  { name: "a unicode table, empty", url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF", status: 200, text: "[]" },
  {
    name: "a unicode column written",
    method: "POST",
    url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF",
    headers: { prefer: "tx=commit, return=representation" },
    body: '{"هویت": 1}',
    status: 201,
    json: [{ "هویت": 1 }],
  },
  { name: "…and read", url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF", status: 200, json: [{ "هویت": 1 }] },
  {
    name: "…and deleted",
    method: "DELETE",
    url: "%D9%85%D9%88%D8%A7%D8%B1%D8%AF",
    headers: { prefer: "tx=commit" },
    status: 204,
    expect: { "content-type": null },
  },
];

/** test/spec/Feature/Query/SpreadQueriesSpec.hs (to-one spreads and a junction's spread, on tables) */
const SPREAD_SPEC: WireCase[] = [
  {
    name: "a many-to-one spread",
    url: "projects?select=id,...clients(client_name:name)",
    status: 200,
    json: [
      { id: 1, client_name: "Microsoft" },
      { id: 2, client_name: "Microsoft" },
      { id: 3, client_name: "Apple" },
      { id: 4, client_name: "Apple" },
      { id: 5, client_name: null },
    ],
  },
  {
    name: "nested spreads",
    url:
      "grandchild_entities?select=name,...child_entities(parent_name:name,...entities(grandparent_name:name))" +
      "&limit=3",
    status: 200,
    json: [
      { name: "grandchild entity 1", parent_name: "child entity 1", grandparent_name: "entity 1" },
      { name: "grandchild entity 2", parent_name: "child entity 1", grandparent_name: "entity 1" },
      { name: "grandchild entity 3", parent_name: "child entity 2", grandparent_name: "entity 1" },
    ],
  },
  {
    name: "a spread inside an embed",
    url:
      "grandchild_entities?select=name,child_entity:child_entities(name,...entities(parent_name:name))&limit=1",
    status: 200,
    json: [{
      name: "grandchild entity 1",
      child_entity: { name: "child entity 1", parent_name: "entity 1" },
    }],
  },
  {
    name: "a junction's columns and the spread target's",
    url: "users?select=*,tasks:users_tasks(*,...tasks(*))&limit=1",
    status: 200,
    json: [{
      id: 1,
      name: "Angela Martin",
      tasks: [
        { user_id: 1, task_id: 1, id: 1, name: "Design w7", project_id: 1 },
        { user_id: 1, task_id: 2, id: 2, name: "Code w7", project_id: 1 },
        { user_id: 1, task_id: 3, id: 3, name: "Design w10", project_id: 2 },
        { user_id: 1, task_id: 4, id: 4, name: "Code w10", project_id: 2 },
      ],
    }],
  },
  {
    name: "the spread target's columns only",
    url: "users?select=*,tasks:users_tasks(...tasks(*))&limit=1",
    status: 200,
    json: [{
      id: 1,
      name: "Angela Martin",
      tasks: [
        { id: 1, name: "Design w7", project_id: 1 },
        { id: 2, name: "Code w7", project_id: 1 },
        { id: 3, name: "Design w10", project_id: 2 },
        { id: 4, name: "Code w10", project_id: 2 },
      ],
    }],
  },
];

const GROUPS: [string, WireCase[]][] = [
  ["ErrorSpec", ERROR_SPEC],
  ["QuerySpec", QUERY_SPEC],
  ["AndOrParamsSpec", AND_OR_SPEC],
  ["QuerySpec (full-text search)", FTS_SPEC],
  ["RelatedQueriesSpec", RELATED_QUERIES_SPEC],
  ["EmbedInnerJoinSpec", EMBED_INNER_JOIN_SPEC],
  ["SpreadQueriesSpec", SPREAD_SPEC],
  ["JsonOperatorSpec", JSON_OPERATOR_SPEC],
  ["SingularSpec", SINGULAR_SPEC],
  ["RangeSpec", RANGE_SPEC],
  ["Insert/Update/DeleteSpec", WRITE_SPEC],
  ["RpcSpec", RPC_SPEC],
  ["RpcSpec (results)", RPC_RESULT_SPEC],
  ["EmbedDisambiguationSpec", EMBED_DISAMBIGUATION_SPEC],
  ["UpsertSpec", UPSERT_SPEC],
  ["HandlingSpec", HANDLING_SPEC],
  ["TimezoneSpec", TIMEZONE_SPEC],
  ["UnicodeSpec", UNICODE_SPEC],
  ["NullsStripSpec", NULLS_STRIP_SPEC],
  ["OptionsSpec", OPTIONS_SPEC],
  ["CorsSpec", CORS_SPEC],
  ["InsertSpec (successes)", INSERT_SPEC],
  ["MaxAffectedSpec", MAX_AFFECTED_SPEC],
];

/**
 * test/spec/Feature/Query/UpdateSpec.hs, on a platform of its own: PostgREST rolls back every case, here those
 * whose checks allow it send `tx=rollback`, and the case that changes a key comes last.
 */
const UPDATE_SPEC: WireCase[] = [
  {
    name: "insignificant whitespace around the body",
    method: "PATCH",
    url: "items?id=eq.1",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '\t \n \r { "id": 99 } \t \n \r ',
    status: 200,
    json: [{ id: 99 }],
    bytes: 11,
  },
  {
    name: "one item: 204, Content-Range 0-0/*",
    method: "PATCH",
    url: "items?id=eq.2",
    headers: { prefer: "tx=rollback" },
    body: '{"id":42}',
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "0-0/*" },
  },
  {
    name: "no row, return=representation: []",
    method: "PATCH",
    url: "items?id=eq.999999",
    headers: { prefer: "return=representation" },
    body: '{"id":999999}',
    status: 200,
    text: "[]",
    expect: { "preference-applied": "return=representation" },
    bytes: 2,
  },
  { name: "no row: 204", method: "PATCH", url: "items?id=eq.99999999", body: '{"id":42}', status: 204 },
  {
    name: "return=representation: the rows",
    method: "PATCH",
    url: "items?id=eq.2",
    headers: { prefer: "return=representation" },
    body: '{"id":2}',
    status: 200,
    json: [{ id: 2 }],
    expect: { "content-range": "0-0/*", "preference-applied": "return=representation" },
  },
  { name: "before updating several rows", url: "no_pk?select=a&b=eq.1", status: 200, json: [] },
  {
    name: "several rows, tx=commit",
    method: "PATCH",
    url: "no_pk?b=eq.0",
    headers: { prefer: "tx=commit" },
    body: '{"b": "1"}',
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "0-1/*", "preference-applied": "tx=commit" },
  },
  {
    name: "…the rows were updated",
    url: "no_pk?select=a&b=eq.1",
    status: 200,
    json: [{ a: "1" }, { a: "2" }],
  },
  {
    name: "…and put back",
    method: "PATCH",
    url: "no_pk?b=eq.1",
    headers: { prefer: "tx=commit" },
    body: '{"b": "0"}',
    status: 204,
    text: "",
    expect: { "content-type": null },
  },
  {
    name: "a column set to null",
    method: "PATCH",
    url: "no_pk?a=eq.1",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"b": null}',
    status: 200,
    json: [{ a: "1", b: null }],
  },
  {
    name: "filtered by a computed column, no row",
    method: "PATCH",
    url: "items?always_true=eq.false",
    headers: { prefer: "return=representation" },
    body: '{"id": 100}',
    status: 200,
    text: "[]",
    expect: { "preference-applied": "return=representation" },
  },
  {
    name: "a computed column in the representation",
    method: "PATCH",
    url: "items?id=eq.1&select=id,always_true",
    headers: { prefer: "return=representation" },
    body: '{"id": 1}',
    status: 200,
    json: [{ id: 1, always_true: true }],
    expect: { "content-type": JSON_TYPE, "preference-applied": "return=representation" },
  },
  {
    name: "an overloaded computed column (items)",
    method: "PATCH",
    url: "items?id=eq.1&select=id,computed_overload",
    headers: { prefer: "return=representation" },
    body: '{"id": 1}',
    status: 200,
    json: [{ id: 1, computed_overload: true }],
    expect: { "preference-applied": "return=representation" },
  },
  {
    name: "an overloaded computed column (items2)",
    method: "PATCH",
    url: "items2?id=eq.1&select=id,computed_overload",
    headers: { prefer: "return=representation" },
    body: '{"id": 1}',
    status: 200,
    json: [{ id: 1, computed_overload: true }],
    expect: { "preference-applied": "return=representation" },
  },
  {
    name: "select= with return=minimal: ignored",
    method: "PATCH",
    url: "items?id=eq.1&select=id",
    headers: { prefer: "return=minimal" },
    body: '{"id":1}',
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "0-0/*", "preference-applied": "return=minimal" },
  },
  ...["{}", "[]", "[{}]"].flatMap((body) =>
    ["items", "items?select=id"].map((url): WireCase => ({
      name: `an empty body ${body} on ${url}: nothing updated, 204`,
      method: "PATCH",
      url,
      body,
      status: 204,
      text: "",
      expect: { "content-type": null, "content-range": "*/*" },
    }))
  ),
  ...["items", "items?select=id", "items?select=id,computed_overload"].map((url): WireCase => ({
    name: `an empty body on ${url}, return=representation: []`,
    method: "PATCH",
    url,
    headers: { prefer: "return=representation" },
    body: "{}",
    status: 200,
    text: "[]",
    expect: { "content-range": "*/*", "preference-applied": "return=representation" },
  })),
  {
    name: "unicode values",
    method: "PATCH",
    url: "no_pk?a=eq.1",
    headers: { prefer: "return=representation, tx=rollback" },
    body: '{"a":"圍棋", "b":"￥"}',
    status: 200,
    json: [{ a: "圍棋", b: "￥" }],
  },
];

/** test/spec/Feature/Query/DeleteSpec.hs, after UpdateSpec on its platform (deletes rolled back where allowed). */
const DELETE_SPEC: WireCase[] = [
  {
    name: "DELETE: 204, Content-Range */*",
    method: "DELETE",
    url: "items?id=eq.1",
    headers: { prefer: "tx=rollback" },
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "*/*" },
  },
  {
    name: "DELETE with return=representation and count=exact",
    method: "DELETE",
    url: "items?id=eq.2",
    headers: { prefer: "return=representation, count=exact" },
    status: 200,
    json: [{ id: 2 }],
    expect: { "content-range": "*/1", "preference-applied": "return=representation, count=exact" },
    bytes: 10,
  },
  {
    name: "DELETE ignores select= without return=",
    method: "DELETE",
    url: "items?id=eq.3&select=id",
    headers: { prefer: "tx=rollback" },
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "*/*" },
  },
  {
    name: "DELETE ignores select= with return=minimal",
    method: "DELETE",
    url: "items?id=eq.3&select=id",
    headers: { prefer: "return=minimal" },
    status: 204,
    text: "",
    expect: { "content-type": null, "content-range": "*/*", "preference-applied": "return=minimal" },
  },
  {
    name: "DELETE shapes the representation",
    method: "DELETE",
    url: "complex_items?id=eq.2&select=id,name",
    headers: { prefer: "return=representation, tx=rollback" },
    status: 200,
    json: [{ id: 2, name: "Two" }],
    expect: { "content-range": "*/*" },
    bytes: 23,
  },
  {
    name: "DELETE renames and casts",
    method: "DELETE",
    url: "complex_items?id=eq.3&select=ciId:id::text,ciName:name",
    headers: { prefer: "return=representation, tx=rollback" },
    status: 200,
    json: [{ ciId: "3", ciName: "Three" }],
  },
  {
    name: "DELETE embeds a parent",
    method: "DELETE",
    url: "tasks?id=eq.8&select=id,name,project:projects(id)",
    headers: { prefer: "return=representation, tx=rollback" },
    status: 200,
    json: [{ id: 8, name: "Code OSX", project: { id: 4 } }],
    expect: { "content-range": "*/*" },
  },
  {
    name: "DELETE of no row, return=representation: []",
    method: "DELETE",
    url: "items?id=eq.101",
    headers: { prefer: "return=representation" },
    status: 200,
    text: "[]",
    expect: { "content-range": "*/*" },
  },
];

/** UpdateSpec's case that changes a key, last on its platform. */
const UPDATE_KEY_SPEC: WireCase[] = [
  {
    name: "filtered by a computed column",
    method: "PATCH",
    url: "items?is_first=eq.true",
    headers: { prefer: "return=representation" },
    body: '{"id": 100}',
    status: 200,
    json: [{ id: 100 }],
    expect: {
      "content-type": JSON_TYPE,
      "content-range": "0-0/*",
      "preference-applied": "return=representation",
    },
  },
];

const byProject = (key: string, rows: [number, number, number, number][]) =>
  rows.map(([sum, max, min, project]) => ({ sum, max, min, [key]: project }));

/** test/spec/Feature/Query/AggregateFunctionsSpec.hs: aggregates allowed (DATA_AGGREGATES), a platform of its own. */
const AGGREGATE_SPEC: WireCase[] = [
  { name: "count()", url: "entities?select=count()", status: 200, json: [{ count: 4 }] },
  { name: "count() renamed", url: "entities?select=cnt:count()", status: 200, json: [{ cnt: 4 }] },
  { name: "count() cast", url: "entities?select=count()::text", status: 200, json: [{ count: "4" }] },
  {
    name: "count() grouped",
    url: "projects?select=c:count(),client_id&order=client_id.desc",
    status: 200,
    json: [{ c: 1, client_id: null }, { c: 2, client_id: 2 }, { c: 2, client_id: 1 }],
  },
  { name: "count as a column", url: "entities?select=count", status: 200, json: [{ count: 4 }] },
  {
    name: "count as a column of an embed (the spec's URL ends in a stray quote)",
    url: "clients?select=name,projects(count)'",
    status: 200,
    json: [{ name: "Microsoft", projects: [{ count: 2 }] }, { name: "Apple", projects: [{ count: 2 }] }],
  },
  { name: "sum()", url: "project_invoices?select=invoice_total.sum()", status: 200, json: [{ sum: 8800 }] },
  {
    name: "avg()",
    url: "project_invoices?select=invoice_total.avg()",
    status: 200,
    text: '[{"avg":1100.0000000000000000}]',
  },
  { name: "min()", url: "project_invoices?select=invoice_total.min()", status: 200, json: [{ min: 100 }] },
  { name: "max()", url: "project_invoices?select=invoice_total.max()", status: 200, json: [{ max: 4000 }] },
  {
    name: "count() of a column",
    url: "project_invoices?select=invoice_total.count()",
    status: 200,
    json: [{ count: 8 }],
  },
  {
    name: "grouped by the other columns",
    url: "project_invoices?select=invoice_total.sum(),invoice_total.max(),invoice_total.min(),project_id" +
      "&order=project_id.desc",
    status: 200,
    json: byProject("project_id", [[4100, 4000, 100, 4], [3200, 2000, 1200, 3], [1200, 700, 500, 2], [
      300,
      200,
      100,
      1,
    ]]),
  },
  {
    name: "grouped by a renamed column",
    url:
      "project_invoices?select=invoice_total.sum(),invoice_total.max(),invoice_total.min(),pid:project_id" +
      "&order=project_id.desc",
    status: 200,
    json: byProject("pid", [[4100, 4000, 100, 4], [3200, 2000, 1200, 3], [1200, 700, 500, 2], [
      300,
      200,
      100,
      1,
    ]]),
  },
  {
    name: "a renamed aggregate cast",
    url: "project_invoices?select=total_charged:invoice_total.sum()::text,project_id&order=project_id.desc",
    status: 200,
    json: [
      { total_charged: "4100", project_id: 4 },
      { total_charged: "3200", project_id: 3 },
      { total_charged: "1200", project_id: 2 },
      { total_charged: "300", project_id: 1 },
    ],
  },
  {
    name: "an aggregate of a function's rows",
    url: "rpc/getallprojects?select=id.max()",
    status: 200,
    json: [{ max: 5 }],
  },
  {
    name: "grouped by an embed",
    url: "project_invoices?select=project_id,total:invoice_total.sum(),projects(name)&order=project_id",
    status: 200,
    json: [
      { project_id: 1, total: 300, projects: { name: "Windows 7" } },
      { project_id: 2, total: 1200, projects: { name: "Windows 10" } },
      { project_id: 3, total: 3200, projects: { name: "IOS" } },
      { project_id: 4, total: 4100, projects: { name: "OSX" } },
    ],
  },
  {
    name: "all aggregates in an embed (jsonb's key order, byte for byte)",
    url:
      "projects?select=name,project_invoices(invoice_total.max(),invoice_total.min(),invoice_total.avg()," +
      "invoice_total.sum(),invoice_total.count())",
    status: 200,
    text: '[{"name":"Windows 7","project_invoices":[{"avg": 150.0000000000000000, "max": 200, "min": 100, ' +
      '"sum": 300, "count": 2}]}, \n {"name":"Windows 10","project_invoices":[{"avg": 600.0000000000000000, ' +
      '"max": 700, "min": 500, "sum": 1200, "count": 2}]}, \n {"name":"IOS","project_invoices":[{"avg": ' +
      '1600.0000000000000000, "max": 2000, "min": 1200, "sum": 3200, "count": 2}]}, \n {"name":"OSX",' +
      '"project_invoices":[{"avg": 2050.0000000000000000, "max": 4000, "min": 100, "sum": 4100, "count": 2}]}, ' +
      '\n {"name":"Orphan","project_invoices":[{"avg": null, "max": null, "min": null, "sum": null, "count": 0}]}]',
  },
];

Deno.test("PostgREST's AggregateFunctionsSpec (aggregates allowed) on /rest/v1", async (t) => {
  const p = await startPlatform({ DATA_AGGREGATES: "true" });
  try {
    await ownerSql(p, SQL);
    for (const c of AGGREGATE_SPEC) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});

/** test/spec/Feature/Query/QueryLimitedSpec.hs: max-rows 2 (DATA_MAX_ROWS), on a platform of its own. */
const QUERY_LIMITED_SPEC: WireCase[] = [
  {
    name: "count=estimated uses the query planner guess when query rows > maxRows",
    method: "HEAD",
    url: "getallprojects_view",
    headers: { prefer: "count=estimated" },
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "0-1/2019" },
  },
  {
    name: "count=estimated gives exact count when query rows <= maxRows",
    method: "HEAD",
    url: "getallprojects_view?id=lt.3",
    headers: { prefer: "count=estimated" },
    status: 200,
    expect: { "content-type": JSON_TYPE, "content-range": "0-1/2" },
  },
  {
    name: "count=estimated only uses the query planner guess if it's indeed greater than the exact count",
    method: "HEAD",
    url: "get_projects_above_view",
    headers: { prefer: "count=estimated" },
    status: 206,
    expect: { "content-type": JSON_TYPE, "content-range": "0-1/3" },
  },
  {
    name: "max-rows caps the rows",
    url: "items?order=id",
    status: 200,
    json: ids(1, 2),
    expect: { "content-range": "0-1/*" },
  },
  {
    name: "a Range within it",
    url: "items",
    headers: { "range-unit": "items", range: "0-0" },
    status: 200,
    json: ids(1),
    expect: { "content-range": "0-0/*" },
  },
  {
    name: "max-rows caps embeds too",
    url: "users?select=id,tasks(id)&order=id.asc&tasks.order=id.asc",
    status: 200,
    json: [{ id: 1, tasks: ids(1, 2) }, { id: 2, tasks: ids(5, 6) }],
    expect: { "content-range": "0-1/*" },
  },
  {
    name: "parent embeds despite the cap",
    url: "tasks?select=id,project:projects(id)&id=gt.5",
    status: 200,
    json: [{ id: 6, project: { id: 3 } }, { id: 7, project: { id: 4 } }],
    expect: { "content-range": "0-1/*" },
  },
  {
    name: "an offset on a parent embed",
    url: "tasks?select=id,project:projects(id)&id=gt.5&project.offset=1",
    status: 200,
    json: [{ id: 6, project: null }, { id: 7, project: null }],
    expect: { "content-range": "0-1/*" },
  },
  { name: "limit=0", url: "items?limit=0", status: 200, json: [], expect: { "content-range": "*/*" } },
  {
    name: "inserts are not capped",
    method: "POST",
    url: "projects?select=id,name",
    headers: { prefer: "return=representation" },
    body: '[{"id": 6, "name": "BeOS"}, {"id": 7, "name": "PopOS"}, {"id": 8, "name": "HaikuOS"}]',
    status: 201,
    json: [{ id: 6, name: "BeOS" }, { id: 7, name: "PopOS" }, { id: 8, name: "HaikuOS" }],
  },
  {
    name: "updates are not capped",
    method: "PATCH",
    url: "employees?select=first_name,last_name,occupation&order=last_name",
    headers: { prefer: "return=representation" },
    body: '[{"occupation": "Barista"}]',
    status: 200,
    json: [
      { first_name: "Daniel B.", last_name: "Lyon", occupation: "Barista" },
      { first_name: "Frances M.", last_name: "Roe", occupation: "Barista" },
      { first_name: "Edwin S.", last_name: "Smith", occupation: "Barista" },
    ],
  },
  {
    name: "deletes are not capped",
    method: "DELETE",
    url: "employees?select=first_name,last_name&order=last_name",
    headers: { prefer: "return=representation" },
    status: 200,
    json: [
      { first_name: "Daniel B.", last_name: "Lyon" },
      { first_name: "Frances M.", last_name: "Roe" },
      { first_name: "Edwin S.", last_name: "Smith" },
    ],
  },
];

Deno.test("PostgREST's QueryLimitedSpec (max-rows 2) on /rest/v1", async (t) => {
  const p = await startPlatform({ DATA_MAX_ROWS: "2" });
  try {
    await ownerSql(p, SQL);
    for (const c of QUERY_LIMITED_SPEC) await t.step(c.name, () => runWireCase(p, c));
  } finally {
    await p.close();
  }
});

Deno.test("PostgREST's UpdateSpec and DeleteSpec on /rest/v1", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    for (const c of [...UPDATE_SPEC, ...DELETE_SPEC, ...UPDATE_KEY_SPEC]) {
      await t.step(c.name, () => runWireCase(p, c));
    }
  } finally {
    await p.close();
  }
});

Deno.test("PostgREST's own spec cases on /rest/v1", async (t) => {
  const p = await startPlatform();
  try {
    await ownerSql(p, SQL);
    for (const [spec, cases] of GROUPS) {
      await t.step(spec, async (t) => {
        for (const c of cases) await t.step(c.name, () => runWireCase(p, c));
      });
    }
  } finally {
    await p.close();
  }
});
