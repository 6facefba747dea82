import { PostgrestClient } from "@supabase/postgrest-js";
import type { TestPlatform } from "./harness.ts";

/** A library schema that exercises every part of the dialect: types, JSON, arrays, ranges, text search, FKs. */
export const LIBRARY_SQL = `
create table authors (
  id int primary key,
  name text not null,
  email text unique,
  meta jsonb
);
create table books (
  id int primary key,
  author_id int references authors (id),
  title text not null,
  price numeric(10, 2),
  published date,
  tags text[] not null default '{}',
  rating int,
  pages int4range,
  in_print boolean not null default true,
  search tsvector generated always as (to_tsvector('english', title)) stored
);
create table reviews (
  id serial primary key,
  book_id int not null references books (id) on delete cascade,
  stars int not null check (stars between 1 and 5),
  comment text
);
create table messages (
  id serial primary key,
  sender_id int not null constraint messages_sender_fkey references authors (id),
  receiver_id int not null constraint messages_receiver_fkey references authors (id),
  body text not null
);
create table genres (id int primary key, name text not null);
create table book_genres (
  book_id int references books (id),
  genre_id int references genres (id),
  primary key (book_id, genre_id)
);
create table bios (author_id int primary key references authors (id), text text);
create table counters (name text primary key, value int not null default 0, note text default 'fresh');

insert into authors values
  (1, 'Ursula Le Guin', 'ursula@example.com', '{"country": "US", "awards": {"hugo": 5}, "langs": ["en"]}'),
  (2, 'Stanisław Lem', 'lem@example.com', '{"country": "PL", "awards": {"hugo": 0}, "langs": ["pl", "en"]}'),
  (3, 'Anonymous', null, null);
insert into books (id, author_id, title, price, published, tags, rating, pages) values
  (1, 1, 'The Dispossessed', 12.50, '1974-05-01', '{scifi,classic}', 5, '[1,387)'),
  (2, 1, 'A Wizard of Earthsea', 8.99, '1968-11-01', '{fantasy,classic}', 4, '[1,205)'),
  (3, 2, 'Solaris', 10.00, '1961-01-01', '{scifi}', 5, '[1,204)'),
  (4, 2, 'The Cyberiad', 15.00, null, '{scifi,humor}', null, '[1,295)'),
  (5, null, 'Beowulf', 5.25, null, '{}', 3, null);
update books set in_print = false where id = 5;
insert into reviews (book_id, stars, comment) values
  (1, 5, 'Ambiguous utopia'), (1, 4, 'Slow start'), (3, 5, 'Ocean'), (4, 3, null);
insert into messages (sender_id, receiver_id, body) values (1, 2, 'hello'), (2, 1, 'witaj');
insert into genres values (1, 'science fiction'), (2, 'fantasy');
insert into book_genres values (1, 1), (2, 2), (3, 1), (4, 1);
insert into bios values (1, 'Born in Berkeley');
`;

/** Runs owner SQL through `POST /v1/sql` and fails loudly when it does not succeed. */
export async function ownerSql(
  p: TestPlatform,
  query: string,
  host = "http://127.0.0.1",
): Promise<unknown[]> {
  const res = await p.fetch(`${host}/v1/sql`, {
    method: "POST",
    headers: { apikey: p.secretKey },
    json: { query },
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`SQL failed: ${JSON.stringify(body)}`);
  return body.data;
}

/** A postgrest-js client on `/rest/v1` of an in-process platform, its fetch routed to the handler. */
export function restClient(p: TestPlatform, key: string, token?: string): PostgrestClient {
  const headers: Record<string, string> = { apikey: key };
  if (token) headers.authorization = `Bearer ${token}`;
  return new PostgrestClient("http://127.0.0.1/rest/v1", {
    headers,
    fetch: async (input, init) => await p.handler(new Request(input, init)),
  });
}
