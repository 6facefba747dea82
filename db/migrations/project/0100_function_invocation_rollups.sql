-- Invocations are counted per function per UTC minute instead of one row per call: every call is
-- counted at any rate, and writing them costs one upsert per project per second. The histogram's slots are
-- those of services/functions/duration_histogram.ts: slot 0 below 0.01 ms, then bounds 0.01 ms * 1.1^k made by
-- repeated float8 multiplication (as there), so `width_bucket` below slots old rows as the recorder does.
create table platform.function_invocation_rollups (
  function_id uuid not null,
  function_name text not null,
  bucket timestamptz not null, -- start of the UTC minute
  count bigint not null,
  errors bigint not null, -- outcome other than ok
  timeouts bigint not null,
  oom bigint not null,
  -- calls by class of HTTP status (the function's answer, or 500/504 set by the platform); a null status,
  -- or one outside 100..599, is in none
  status_1xx bigint not null,
  status_2xx bigint not null,
  status_3xx bigint not null,
  status_4xx bigint not null,
  status_5xx bigint not null,
  sum_ms double precision not null,
  min_ms double precision not null,
  max_ms double precision not null,
  hist integer[] not null, -- calls per duration slot, from slot 0, without trailing empty slots
  primary key (function_id, bucket)
);
create index function_invocation_rollups_bucket on platform.function_invocation_rollups (bucket);

insert into platform.function_invocation_rollups
  (function_id, function_name, bucket, count, errors, timeouts, oom, status_1xx, status_2xx, status_3xx,
   status_4xx, status_5xx, sum_ms, min_ms, max_ms, hist)
with recursive bounds (k, v) as (
  select 0, 0.01::float8
  union all
  select k + 1, v * 1.1::float8 from bounds where k < 190
),
slotted as (
  select i.*, date_trunc('minute', i.created_at, 'UTC') as bucket,
         width_bucket(i.duration_ms, (select array_agg(v order by k) from bounds)) + 1 as slot
  from platform.function_invocations i
),
minutes as (
  select function_id, bucket,
         (array_agg(function_name order by created_at desc, id desc))[1] as function_name,
         count(*) as count,
         count(*) filter (where outcome <> 'ok') as errors,
         count(*) filter (where outcome = 'timeout') as timeouts,
         count(*) filter (where outcome = 'oom') as oom,
         count(*) filter (where status >= 100 and status < 200) as status_1xx,
         count(*) filter (where status >= 200 and status < 300) as status_2xx,
         count(*) filter (where status >= 300 and status < 400) as status_3xx,
         count(*) filter (where status >= 400 and status < 500) as status_4xx,
         count(*) filter (where status >= 500 and status < 600) as status_5xx,
         sum(duration_ms) as sum_ms,
         min(duration_ms) as min_ms,
         max(duration_ms) as max_ms,
         max(slot) as slots
  from slotted group by function_id, bucket
),
filled as (
  select function_id, bucket, slot, count(*)::int as n from slotted group by function_id, bucket, slot
),
hists as (
  select m.function_id, m.bucket, array_agg(coalesce(f.n, 0) order by g.slot) as hist
  from minutes m
  cross join lateral generate_series(1, m.slots) as g (slot)
  left join filled f on f.function_id = m.function_id and f.bucket = m.bucket and f.slot = g.slot
  group by m.function_id, m.bucket
)
select m.function_id, m.function_name, m.bucket, m.count, m.errors, m.timeouts, m.oom, m.status_1xx,
       m.status_2xx, m.status_3xx, m.status_4xx, m.status_5xx, m.sum_ms, m.min_ms, m.max_ms, h.hist
from minutes m join hists h on h.function_id = m.function_id and h.bucket = m.bucket;

drop table platform.function_invocations;
