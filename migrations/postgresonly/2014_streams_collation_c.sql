-- PostgreSQL only (see 2001_key_collation_c): stream ids and consumers of
-- dedup_streams compare bytewise, so that ListStreams pages in bytewise
-- order as on every other store.
ALTER TABLE dedup_streams
    ALTER COLUMN consumer TYPE TEXT COLLATE "C",
    ALTER COLUMN stream TYPE TEXT COLLATE "C";

ALTER TABLE dedup_stream_policies ALTER COLUMN consumer TYPE TEXT COLLATE "C";
