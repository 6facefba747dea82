-- Instances sharing one PostgreSQL pull due notifications straight from the table (claimDue in
-- services/notifications/store.ts): this index serves its scan, oldest due first. Jobs have jobs_due already.
create index messages_due on notifications.messages
  ((case when status = 'queued' then scheduled_at else next_attempt_at end))
  where dispatch_id is not null and status in ('queued', 'failed');
