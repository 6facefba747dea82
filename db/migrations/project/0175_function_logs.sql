-- The recent console output of each function, kept in the project database so that every instance reads the
-- same log; the newest FUNCTIONS_LOG_LINES lines of each function are kept.
create table platform.function_logs (
  id bigint generated always as identity primary key,
  function_id uuid not null references platform.functions (id) on delete cascade,
  at timestamptz not null,
  level text not null check (level in ('debug', 'info', 'warn', 'error')),
  message text not null
);
create index function_logs_function on platform.function_logs (function_id, at desc, id desc);
