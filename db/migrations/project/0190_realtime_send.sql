-- Broadcast from SQL, as Supabase has it: `select realtime.send(payload, event, topic, private)` from a trigger,
-- a function called over /rest/v1/rpc or the SQL editor stores a row in realtime.messages, and that row goes out
-- as a broadcast `event` on `topic` to the channel's subscribers once the transaction commits. The row is the
-- message: the caller must be allowed to write it (the INSERT privilege and the INSERT policies on
-- realtime.messages, with `realtime.topic()` set to the topic), exactly as for a client that sends on a private
-- channel. A transaction that rolls back sends nothing.
--
-- The row reaches the subscribers the way captured changes do: a trigger on realtime.messages publishes it with
-- realtime.publish on the `realtime` channel (through realtime.overflow when it is large), which every instance
-- listens to. Rows the platform stores itself after sending them (a client's `persist`) carry an `expires_at`
-- and are not sent again; rows without one are sent, and kept for a private channel's replay as long as stored
-- broadcasts are (3 days).

-- The largest payload a broadcast may carry, written by the platform from its configuration
-- (REALTIME_MAX_MESSAGE_BYTES) when it starts realtime for the project; one row.
create table if not exists realtime.settings (
  id boolean primary key default true check (id),
  max_payload_bytes integer not null
);
insert into realtime.settings (max_payload_bytes) values (262144) on conflict (id) do nothing;
alter table realtime.settings owner to platform_realtime;
revoke all on realtime.settings from public;

-- Rows stored by SQL name their time in UTC, as the platform's own rows do (replay compares them in UTC).
alter table realtime.messages alter column inserted_at set default (now() at time zone 'utc');
alter table realtime.messages alter column updated_at set default (now() at time zone 'utc');
create index if not exists messages_sent_at on realtime.messages (inserted_at) where expires_at is null;

-- The trigger's function: checks the payload against the limit and publishes the row. It runs as
-- platform_realtime (no login, no superuser), which owns realtime.publish and realtime.settings; it reads only
-- the new row.
create or replace function realtime.publish_message() returns trigger
language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
declare
  max_bytes integer;
  body text;
begin
  select s.max_payload_bytes into max_bytes from realtime.settings s;
  body := coalesce(new.payload, '{}'::jsonb)::text;
  if octet_length(body) > coalesce(max_bytes, 262144) then
    raise exception 'Broadcast payload is larger than the limit of % bytes', coalesce(max_bytes, 262144)
      using errcode = '54000';
  end if;
  perform realtime.publish('realtime', pg_catalog.json_build_object(
    'kind', 'broadcast',
    'topic', new.topic,
    'event', new.event,
    'private', coalesce(new.private, false),
    'payload', coalesce(new.payload, '{}'::jsonb)
  )::text);
  return null;
end $$;
alter function realtime.publish_message() owner to platform_realtime;
revoke all on function realtime.publish_message() from public;

drop trigger if exists realtime_publish on realtime.messages;
create trigger realtime_publish after insert on realtime.messages
  for each row when (new.extension = 'broadcast' and new.expires_at is null and new.event is not null)
  execute function realtime.publish_message();

-- Sends `payload` as the broadcast `event` on `topic` (private by default, as in Supabase), when the transaction
-- commits. The payload gets an `id` (the message's) unless it has one. It runs with the caller's rights: a
-- caller its policies do not let write the message gets a warning and nothing is sent, as in Supabase, so that
-- a trigger calling it does not fail the write it fires on; a payload over the limit is an error (54000).
create or replace function realtime.send(payload jsonb, event text, topic text, private boolean default true)
returns void language plpgsql set search_path = pg_catalog, pg_temp as $$
declare
  message_id uuid := gen_random_uuid();
  previous text := pg_catalog.current_setting('realtime.topic', true);
begin
  if topic is null or event is null then
    raise exception 'realtime.send: topic and event are required' using errcode = '22004';
  end if;
  if payload is null or pg_catalog.jsonb_typeof(payload) <> 'object' then
    raise exception 'realtime.send: payload must be a JSON object' using errcode = '22023';
  end if;
  if not payload ? 'id' then
    payload := payload || pg_catalog.jsonb_build_object('id', message_id);
  end if;
  perform pg_catalog.set_config('realtime.topic', topic, true);
  begin
    insert into realtime.messages (id, topic, extension, event, payload, private)
    values (message_id, topic, 'broadcast', event, payload, coalesce(private, true));
  exception when insufficient_privilege then
    raise warning 'ErrorSendingBroadcastMessage: %', sqlerrm;
  end;
  perform pg_catalog.set_config('realtime.topic', coalesce(previous, ''), true);
end $$;
alter function realtime.send(jsonb, text, text, boolean) owner to platform_realtime;

-- For a row trigger: sends the change as Supabase's broadcast_changes does, a payload of `record`, `old_record`,
-- `operation`, `table` and `schema`, through realtime.send on the private topic `topic_name`.
create or replace function realtime.broadcast_changes(
  topic_name text, event_name text, operation text, table_name text, table_schema text,
  new record, old record, level text default 'ROW'
) returns void language plpgsql set search_path = pg_catalog, pg_temp as $$
begin
  if level = 'STATEMENT' then
    raise exception 'realtime.broadcast_changes: only a row trigger can send its changes' using errcode = '22023';
  end if;
  if operation is null or operation not in ('INSERT', 'UPDATE', 'DELETE') then
    raise exception 'realtime.broadcast_changes: unexpected operation %', operation using errcode = '22023';
  end if;
  perform realtime.send(
    pg_catalog.jsonb_build_object(
      'old_record', old, 'record', new, 'operation', operation, 'table', table_name, 'schema', table_schema
    ),
    event_name,
    topic_name
  );
end $$;
alter function realtime.broadcast_changes(text, text, text, text, text, record, record, text)
  owner to platform_realtime;

-- Who may call them: anyone who may use the schema, as in Supabase (where they keep PostgreSQL's default
-- EXECUTE for public). They act with the caller's rights, so what decides is the caller's right to write the
-- message: the owner's (it owns realtime.messages), service_role's, or what the policies give anon and
-- authenticated.
grant execute on function realtime.send(jsonb, text, text, boolean) to public;
grant execute on function realtime.broadcast_changes(text, text, text, text, text, record, record, text)
  to public;
