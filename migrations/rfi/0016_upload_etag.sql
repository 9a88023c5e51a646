-- The stored object's version tag (S3's ETag) at the moment its upload was attached. Reading the
-- document compares it with the object's tag now: an S3-compatible server that ignores
-- If-None-Match lets a second PUT to a still-valid upload URL replace an attached object, and a
-- reader must not be served bytes that were never attached. Null on the disk store (which
-- refuses a second PUT itself) and for slots attached before this column existed.
ALTER TABLE rfi_upload_slots ADD COLUMN etag text;
