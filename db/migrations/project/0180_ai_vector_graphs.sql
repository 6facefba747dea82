-- The platform's own vector index, for servers without pgvector: each namespace counts changes to its chunks
-- (an index in memory catches up when the count moves) and to its vectors (a reindex: the index is rebuilt),
-- and keeps its HNSW graph so that a restart reloads it instead of building it again.
alter table platform.ai_namespaces
  add column chunks_version bigint not null default 0,
  add column vectors_version bigint not null default 0;

create table platform.ai_vector_graphs (
  namespace_id bigint primary key references platform.ai_namespaces (id) on delete cascade,
  vectors_version bigint not null,
  graph bytea not null,
  saved_at timestamptz not null default now()
);

revoke all on platform.ai_vector_graphs from public, anon, authenticated;
