DROP TABLE account_suspensions;
DROP TABLE abuse_reports;
DROP TABLE staff_audit;
DROP TABLE staff_tokens;
