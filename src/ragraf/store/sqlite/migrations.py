"""Numbered schema migrations of the SQLite store; PRAGMA user_version records the last applied."""

from __future__ import annotations

APPLICATION_ID = 0x52414746  # "RAGF": tells a ragraf index from any other SQLite file

MIGRATIONS: list[str] = [
    # 1: revisions, manifests, content-addressed chunks, lexical index, stat cache.
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE revisions (
        rev_no INTEGER PRIMARY KEY AUTOINCREMENT,
        rev TEXT NOT NULL UNIQUE,
        corpus_hash TEXT NOT NULL,
        created_at TEXT NOT NULL,
        index_version TEXT NOT NULL,
        git_head TEXT,
        git_branch TEXT,
        files INTEGER NOT NULL,
        chunks INTEGER NOT NULL
    );
    CREATE TABLE contents (
        id INTEGER PRIMARY KEY,
        sha256 TEXT NOT NULL,
        language TEXT NOT NULL,
        chunker TEXT NOT NULL,
        n_chunks INTEGER NOT NULL,
        UNIQUE (sha256, language, chunker)
    );
    CREATE TABLE manifest (
        rev_no INTEGER NOT NULL,
        path TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        content_id INTEGER NOT NULL,
        size INTEGER NOT NULL,
        PRIMARY KEY (rev_no, path)
    ) WITHOUT ROWID;
    CREATE INDEX manifest_by_content ON manifest (content_id, rev_no);
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        content_id INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        symbol TEXT,
        text TEXT NOT NULL
    );
    CREATE INDEX chunks_by_content ON chunks (content_id, ord);
    CREATE VIRTUAL TABLE chunks_fts USING fts5 (
        body, symbol, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE stat_cache (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        checked_ns INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 2: code facts per content, the drift ledger and its archive.
    """
    ALTER TABLE contents ADD COLUMN facts_status TEXT NOT NULL DEFAULT 'none';
    CREATE TABLE facts (
        content_id INTEGER NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        name_lower TEXT NOT NULL,
        def_kind TEXT,
        container TEXT,
        line INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        signature TEXT,
        is_call INTEGER NOT NULL DEFAULT 0,
        body_hash TEXT
    );
    CREATE INDEX facts_by_name ON facts (name_lower, kind);
    CREATE INDEX facts_by_content ON facts (content_id, kind);
    CREATE TABLE drift_ledger (
        entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
        rev TEXT NOT NULL,
        change TEXT NOT NULL,
        path TEXT NOT NULL,
        detected_by TEXT NOT NULL,
        detected_at TEXT NOT NULL,
        old_sha256 TEXT,
        new_sha256 TEXT,
        affected_nodes TEXT NOT NULL,
        affected_symbols TEXT NOT NULL,
        dedupe_key TEXT NOT NULL UNIQUE
    );
    CREATE TABLE drift_archive (
        entry_id INTEGER PRIMARY KEY,
        rev TEXT NOT NULL,
        change TEXT NOT NULL,
        path TEXT NOT NULL,
        detected_by TEXT NOT NULL,
        detected_at TEXT NOT NULL,
        old_sha256 TEXT,
        new_sha256 TEXT,
        affected_nodes TEXT NOT NULL,
        affected_symbols TEXT NOT NULL,
        dedupe_key TEXT NOT NULL UNIQUE,
        closed_by TEXT NOT NULL,
        archived_at TEXT NOT NULL
    );
    CREATE INDEX drift_archive_by_closer ON drift_archive (closed_by);
    """,
    # 3: embedding vectors per (chunk, model).
    """
    CREATE TABLE vectors (
        chunk_id INTEGER NOT NULL,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (model, chunk_id)
    ) WITHOUT ROWID;
    CREATE INDEX vectors_by_chunk ON vectors (chunk_id);
    """,
    # 4: references in a lean table of their own (most facts are references; one index, no wide keys).
    """
    CREATE TABLE refs (
        content_id INTEGER NOT NULL,
        name TEXT NOT NULL,
        container TEXT,
        line INTEGER NOT NULL,
        is_call INTEGER NOT NULL
    );
    INSERT INTO refs (content_id, name, container, line, is_call)
        SELECT content_id, name, container, line, is_call FROM facts WHERE kind = 'ref';
    DELETE FROM facts WHERE kind = 'ref';
    CREATE INDEX refs_by_name ON refs (name);
    """,
    # 5: lexical rows wait in pending_fts until a revision names their content, so what a killed run
    # stored never shifts the BM25 statistics of the revision being answered from.
    """
    CREATE TABLE pending_fts (chunk_id INTEGER PRIMARY KEY, body TEXT NOT NULL, symbol TEXT NOT NULL);
    """,
    # 6: views: every work tree of a git repository keeps its own revisions and stat cache in the one
    # file, over shared contents ('' is the base, or the only view of a folder outside git).
    """
    ALTER TABLE revisions ADD COLUMN view TEXT NOT NULL DEFAULT '';
    CREATE INDEX revisions_by_view ON revisions (view, rev_no);
    CREATE TABLE stat_cache_by_view (
        view TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        checked_ns INTEGER NOT NULL,
        PRIMARY KEY (view, path)
    ) WITHOUT ROWID;
    INSERT INTO stat_cache_by_view SELECT '', path, size, mtime_ns, ctime_ns, inode, sha256, checked_ns FROM stat_cache;
    DROP TABLE stat_cache;
    ALTER TABLE stat_cache_by_view RENAME TO stat_cache;
    """,
    # 7: the lexical index holds only what the current revisions name; older revisions' rows have an
    # index of their own, so retention never changes the current answers' BM25 statistics.
    # IF NOT EXISTS: for a while schema 6 itself created this table, and those indexes must open too.
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts_retained USING fts5 (
        body, symbol, tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO chunks_fts_retained (rowid, body, symbol)
        SELECT f.rowid, f.body, f.symbol FROM chunks_fts f JOIN chunks k ON k.id = f.rowid
        WHERE NOT EXISTS (SELECT 1 FROM manifest m WHERE m.content_id = k.content_id
                          AND m.rev_no IN (SELECT max(rev_no) FROM revisions GROUP BY view));
    DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks_fts_retained);
    """,
    # 8: manifest rows found by revision first: a new revision's rows append to the index and a
    # dropped one's leave as one range, instead of touching pages all over a (content, revision)
    # index (100,000 files: copying a manifest 2.3 s -> 0.4 s, dropping one 1.3 s -> 0.3 s).
    """
    DROP INDEX IF EXISTS manifest_by_content;
    CREATE INDEX IF NOT EXISTS manifest_by_revision ON manifest (rev_no, content_id);
    """,
    # 9: references one row per (content, name), their uses packed in line order: a sixth of the
    # rows and name-index entries, which were most of what facts added to a cold index.
    """
    CREATE TABLE ref_sites (content_id INTEGER NOT NULL, name TEXT NOT NULL, sites TEXT NOT NULL);
    INSERT INTO ref_sites (content_id, name, sites)
        SELECT content_id, name, json_group_array(json_array(line, is_call, container))
        FROM (SELECT content_id, name, line, is_call, container FROM refs ORDER BY content_id, name, line, rowid)
        GROUP BY content_id, name;
    DROP TABLE refs;
    CREATE INDEX ref_sites_by_name ON ref_sites (name);
    """,
    # 10: the lexical tables keep only their index (contentless: a row's body is rebuilt from its
    # chunk when it moves or leaves), and chunk text is stored zlib-compressed (about 4x smaller).
    # ragraf_pack_text is the store's pack_text.
    """
    CREATE VIRTUAL TABLE chunks_fts_v10 USING fts5 (
        body, symbol, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO chunks_fts_v10 (rowid, body, symbol) SELECT rowid, body, symbol FROM chunks_fts;
    DROP TABLE chunks_fts;
    ALTER TABLE chunks_fts_v10 RENAME TO chunks_fts;
    CREATE VIRTUAL TABLE chunks_fts_retained_v10 USING fts5 (
        body, symbol, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO chunks_fts_retained_v10 (rowid, body, symbol)
        SELECT rowid, body, symbol FROM chunks_fts_retained;
    DROP TABLE chunks_fts_retained;
    ALTER TABLE chunks_fts_retained_v10 RENAME TO chunks_fts_retained;
    UPDATE chunks SET text = ragraf_pack_text(text) WHERE typeof(text) = 'text';
    """,
    # 11: which index_text made the lexical rows (tokens.INDEX_TEXT_VERSION): when it changes, the
    # store rebuilds them on open, since removing a row needs the body it was indexed with.
    """
    INSERT OR REPLACE INTO meta (key, value) VALUES ('lexical_body', '1');
    """,
    # 12: manifests kept as rows valid over a range of a view's revisions: a revision closes the
    # rows of the paths it changes or removes (until_rev = its number) and adds rows for what it
    # brings, so a one-file change writes two rows instead of copying the whole manifest; a row
    # still current has until_rev 2147483647 (base.LIVE_REV). `manifest` stays readable as before,
    # a view of (rev_no, path, sha256, content_id, size). Consecutive revisions of a view holding
    # the same entry for a path become one row.
    """
    CREATE TABLE manifest_rows (
        view TEXT NOT NULL,
        path TEXT NOT NULL,
        first_rev INTEGER NOT NULL,
        until_rev INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        content_id INTEGER NOT NULL,
        size INTEGER NOT NULL,
        PRIMARY KEY (view, path, first_rev)
    ) WITHOUT ROWID;
    INSERT INTO manifest_rows (view, path, first_rev, until_rev, sha256, content_id, size)
        WITH revs AS (
            SELECT rev_no, view, row_number() OVER (PARTITION BY view ORDER BY rev_no) AS seq,
                lead(rev_no) OVER (PARTITION BY view ORDER BY rev_no) AS next_rev
            FROM revisions),
        held AS (
            SELECT r.view, m.path, m.rev_no, r.next_rev, m.sha256, m.content_id, m.size,
                CASE WHEN lag(r.seq) OVER w = r.seq - 1 AND lag(m.sha256) OVER w = m.sha256
                    AND lag(m.content_id) OVER w = m.content_id AND lag(m.size) OVER w = m.size
                    THEN 0 ELSE 1 END AS starts
            FROM manifest m JOIN revs r ON r.rev_no = m.rev_no
            WINDOW w AS (PARTITION BY r.view, m.path ORDER BY m.rev_no)),
        runs AS (
            SELECT *, sum(starts) OVER (PARTITION BY view, path ORDER BY rev_no ROWS UNBOUNDED PRECEDING) AS run
            FROM held)
        SELECT view, path, min(rev_no),
            CASE WHEN count(next_rev) = count(*) THEN max(next_rev) ELSE 2147483647 END,
            sha256, content_id, size
        FROM runs GROUP BY view, path, run;
    DROP TABLE manifest;
    CREATE INDEX manifest_rows_by_revision ON manifest_rows (view, until_rev, first_rev);
    CREATE INDEX manifest_rows_by_content ON manifest_rows (content_id, view, until_rev);
    CREATE VIEW manifest (rev_no, path, sha256, content_id, size) AS
        SELECT r.rev_no, m.path, m.sha256, m.content_id, m.size FROM revisions r
        JOIN manifest_rows m ON m.view = r.view AND m.first_rev <= r.rev_no AND m.until_rev > r.rev_no;
    """,
    # 13: each reference row's number of uses, written with it: a repo map counts a file's uses of
    # every name without unpacking all the sites (a third of its reading on a large index)
    """
    ALTER TABLE ref_sites ADD COLUMN uses INTEGER;
    UPDATE ref_sites SET uses = json_array_length(sites);
    """,
    # 14: a file's references found by its content (the code graph reads a file's calls), not by
    # a scan of every reference row of the index (a tenth of a second each on 10,000 files); with
    # the name and the uses, the index alone answers a repo map's reading of all of them
    """
    CREATE INDEX ref_sites_by_content ON ref_sites (content_id, name, uses);
    """,
    # 15: the definitions with all a repo map reads of them, so its reading is the index alone (half
    # the pages of the facts table); partial (WHERE def_kind IS NOT NULL, which no other query says)
    # so no other plan is changed by it
    """
    CREATE INDEX IF NOT EXISTS facts_for_map ON facts (def_kind, content_id, line, name, container, signature, kind)
        WHERE def_kind IS NOT NULL;
    """,
    # 16: names numbered once, as the facts are written: each definition and reference row holds
    # its name's number, so a repo map reads numbers (no string per use, and no numbering of a few
    # hundred thousand names in Python); its two indexes hold the number instead of (or beside) the name
    """
    CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
    INSERT INTO names (name) SELECT name FROM ref_sites UNION SELECT name FROM facts WHERE kind = 'def';
    ALTER TABLE ref_sites ADD COLUMN name_id INTEGER;
    UPDATE ref_sites SET name_id = (SELECT id FROM names WHERE names.name = ref_sites.name);
    ALTER TABLE facts ADD COLUMN name_id INTEGER;
    UPDATE facts SET name_id = (SELECT id FROM names WHERE names.name = facts.name) WHERE kind = 'def';
    DROP INDEX ref_sites_by_content;
    CREATE INDEX ref_sites_by_content ON ref_sites (content_id, name, uses, name_id);
    DROP INDEX facts_for_map;
    CREATE INDEX facts_for_map ON facts (def_kind, content_id, line, name_id, container, signature, kind)
        WHERE def_kind IS NOT NULL;
    """,
]

COMPACT_FROM = 10  # an index migrated across this schema is vacuumed once, into auto_vacuum = INCREMENTAL
