-- A message of a few KB, sealed, is a row of a few KB. PostgreSQL moves a
-- value out of line once a row passes about 2 KB: a 4 KB message became a
-- heap row, two or three TOAST chunks and their TOAST index entries, and
-- every read of it a lookup in that index. With the target at its largest
-- (8160 bytes: a row still fits a page), content up to about 8 KB stays in
-- the row; larger content goes out of line as before (storage EXTERNAL: no
-- compression tried on ciphertext). Rows already stored keep their form.
ALTER TABLE messages SET (toast_tuple_target = 8160);
