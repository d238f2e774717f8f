DROP TABLE idempotency_quota;
