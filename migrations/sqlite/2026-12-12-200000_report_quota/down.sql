DROP TABLE report_quota;
