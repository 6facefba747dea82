-- Notifications (issue 7): delivery receipts. A provider's status callback finds its notification by the
-- provider's message id, and a repeated callback (same message, same status) is recorded once.
alter table notifications.attempts
  add column kind text not null default 'send' check (kind in ('send', 'receipt'));
alter table notifications.provider_logs
  add column kind text not null default 'send' check (kind in ('send', 'receipt'));
create index messages_provider_message on notifications.messages (provider, provider_message_id)
  where provider_message_id is not null;
create unique index provider_logs_receipt_once
  on notifications.provider_logs (notification_id, provider, (request ->> 'sid'), (request ->> 'status'))
  where kind = 'receipt';
