DROP TABLE operator_switches;
DROP TABLE support_bindings;
DROP TABLE support_messages;
DROP TABLE support_tickets;
