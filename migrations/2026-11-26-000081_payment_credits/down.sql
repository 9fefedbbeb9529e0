ALTER TABLE payments DROP COLUMN refund_due;
