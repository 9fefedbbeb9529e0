ALTER TABLE messages RESET (toast_tuple_target);
