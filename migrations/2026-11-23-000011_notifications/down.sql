DROP TABLE push_devices;
DROP TABLE notification_mutes;
DROP TABLE notification_preferences;
