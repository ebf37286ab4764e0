-- 006: the end of the last attempt's send window (ledger/sendwindow.go):
-- no request of that attempt may be sent or reach the downstream later.
-- A claim records it; a running claim is declared lost, and a lookup's
-- "not found" trusted, only after it. Unix nanoseconds like the other
-- times; NULL on rows written before it (their last send counts).
ALTER TABLE actions ADD COLUMN send_until bigint;
