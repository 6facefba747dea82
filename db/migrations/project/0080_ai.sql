-- AI gateway: RAG corpora and token usage, in the internal platform schema.
-- pgvector is used where the server offers it; without it (or without the privilege to create it) the same
-- real[] column is searched by an exact scan. Each namespace gets its own partial HNSW index on
-- (embedding::vector(dimensions)), created by the gateway when the namespace is created or reindexed.
do $$
begin
  if exists (select 1 from pg_available_extensions where name = 'vector') then
    begin
      create extension if not exists vector;
    exception when others then
      raise notice 'pgvector is available but could not be created: exact scan';
    end;
  end if;
end $$;

create table platform.ai_namespaces (
  id bigint generated always as identity primary key,
  name text not null unique,
  embedding_model text not null,
  dimensions int not null check (dimensions between 1 and 16000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table platform.ai_documents (
  namespace_id bigint not null references platform.ai_namespaces (id) on delete cascade,
  id text not null,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now(),
  primary key (namespace_id, id)
);

create table platform.ai_chunks (
  id bigint generated always as identity primary key,
  namespace_id bigint not null,
  document_id text not null,
  ordinal int not null,
  text text not null,
  embedding real[] not null,
  foreign key (namespace_id, document_id) references platform.ai_documents (namespace_id, id) on delete cascade
);
create index ai_chunks_document on platform.ai_chunks (namespace_id, document_id);

-- Token usage per day, provider, model and kind of call: what a project spends.
create table platform.ai_usage (
  day date not null,
  provider text not null,
  model text not null,
  kind text not null,
  requests bigint not null default 0,
  cache_hits bigint not null default 0,
  prompt_tokens bigint not null default 0,
  completion_tokens bigint not null default 0,
  total_tokens bigint not null default 0,
  primary key (day, provider, model, kind)
);

revoke all on platform.ai_namespaces, platform.ai_documents, platform.ai_chunks, platform.ai_usage
  from public, anon, authenticated;
