DROP TABLE IF EXISTS webhook_retries;
DROP TABLE IF EXISTS webhooks;
