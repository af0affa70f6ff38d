-- Rows that differ between CodableStore's import (schema :ours) and the psql baseline's (schema :base), per table,
-- both ways: every count must be 0. Run: psql URL -v ours=NAME -v base=NAME -f postgres-compare.sql
SELECT 'issues' AS rows, count(*) FROM (
    (SELECT i.id, i.number, i.title, i.state, i."createdAt", i."updatedAt", i.comments, i.score, i.body, u.id AS user_id
     FROM :"ours"."Issue" i LEFT JOIN :"ours"."User" u ON u."_pk" = i."user"
     EXCEPT SELECT id, number, title, state, created_at, updated_at, comments, score, body, user_id FROM :"base".issues)
    UNION ALL
    (SELECT id, number, title, state, created_at, updated_at, comments, score, body, user_id FROM :"base".issues
     EXCEPT SELECT i.id, i.number, i.title, i.state, i."createdAt", i."updatedAt", i.comments, i.score, i.body, u.id
     FROM :"ours"."Issue" i LEFT JOIN :"ours"."User" u ON u."_pk" = i."user")) AS differing
UNION ALL
SELECT 'users', count(*) FROM (
    (SELECT id, login FROM :"ours"."User" EXCEPT SELECT id, login FROM :"base".users)
    UNION ALL (SELECT id, login FROM :"base".users EXCEPT SELECT id, login FROM :"ours"."User")) AS differing
UNION ALL
SELECT 'labels', count(*) FROM (
    (SELECT id, name FROM :"ours"."Label" EXCEPT SELECT id, name FROM :"base".labels)
    UNION ALL (SELECT id, name FROM :"base".labels EXCEPT SELECT id, name FROM :"ours"."Label")) AS differing
UNION ALL
SELECT 'links', count(*) FROM (
    (SELECT i.id, l.id FROM :"ours"."Issue_labels" j JOIN :"ours"."Issue" i ON i."_pk" = j.source JOIN :"ours"."Label" l ON l."_pk" = j.target
     EXCEPT SELECT issue_id, label_id FROM :"base".issue_labels)
    UNION ALL
    (SELECT issue_id, label_id FROM :"base".issue_labels
     EXCEPT SELECT i.id, l.id FROM :"ours"."Issue_labels" j JOIN :"ours"."Issue" i ON i."_pk" = j.source JOIN :"ours"."Label" l ON l."_pk" = j.target)) AS differing;
