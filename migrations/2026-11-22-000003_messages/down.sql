DROP TABLE blob_garbage;
DROP TABLE pending_blobs;
DROP TABLE usage_counters;
DROP TABLE attachments;
DROP TABLE messages;
