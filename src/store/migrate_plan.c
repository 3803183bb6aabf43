/* SPDX-License-Identifier: Apache-2.0 */
/* store/migrate_plan: a migration's steps and locks, from its text (see
 * migrate_plan.h). */
#include "store/migrate_plan.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind { TOK_END, TOK_WORD, TOK_STR, TOK_SYM };

struct tok {
        enum tok_kind kind;
        char text[64];    /* a word upper-cased (a quoted one as written),
                           * a symbol; a string: "" */
        bool quoted;      /* a "quoted" identifier: its case kept */
        const char *body; /* a string's contents (a DO block's body) */
        size_t body_len;
        unsigned line;
};

struct lex {
        const char *s;
        size_t n, i;
        unsigned line;
};

static void advance(struct lex *lx, size_t k)
{
        for (size_t j = 0; j < k && lx->i < lx->n; j++, lx->i++)
                if (lx->s[lx->i] == '\n')
                        lx->line++;
}

/* Skips white space and comments (-- to the end of the line, nested
 * slash-star). */
static void skip_blank(struct lex *lx)
{
        for (;;) {
                while (lx->i < lx->n && isspace((unsigned char)lx->s[lx->i]))
                        advance(lx, 1);
                if (lx->i + 1 < lx->n && lx->s[lx->i] == '-' &&
                    lx->s[lx->i + 1] == '-') {
                        while (lx->i < lx->n && lx->s[lx->i] != '\n')
                                advance(lx, 1);
                        continue;
                }
                if (lx->i + 1 < lx->n && lx->s[lx->i] == '/' &&
                    lx->s[lx->i + 1] == '*') {
                        int depth = 0;

                        do {
                                if (lx->i + 1 < lx->n && lx->s[lx->i] == '/' &&
                                    lx->s[lx->i + 1] == '*') {
                                        depth++;
                                        advance(lx, 2);
                                } else if (lx->i + 1 < lx->n &&
                                           lx->s[lx->i] == '*' &&
                                           lx->s[lx->i + 1] == '/') {
                                        depth--;
                                        advance(lx, 2);
                                } else {
                                        advance(lx, 1);
                                }
                        } while (depth > 0 && lx->i < lx->n);
                        continue;
                }
                return;
        }
}

static bool word_char(char c)
{
        return isalnum((unsigned char)c) || c == '_' || c == '$' ||
               (unsigned char)c >= 0x80;
}

/* A dollar-quote's opening tag at i ($$ or $tag$): its length, else 0. */
static size_t dollar_tag(const struct lex *lx, size_t i)
{
        size_t j = i + 1;

        if (i >= lx->n || lx->s[i] != '$')
                return 0;
        while (j < lx->n &&
               (isalnum((unsigned char)lx->s[j]) || lx->s[j] == '_'))
                j++;
        if (j < lx->n && lx->s[j] == '$' &&
            (j == i + 1 || !isdigit((unsigned char)lx->s[i + 1])))
                return j - i + 1;
        return 0;
}

static void next(struct lex *lx, struct tok *t)
{
        size_t tag, start;
        char c;

        memset(t, 0, sizeof(*t));
        skip_blank(lx);
        t->line = lx->line;
        if (lx->i >= lx->n) {
                t->kind = TOK_END;
                return;
        }
        c = lx->s[lx->i];
        if ((tag = dollar_tag(lx, lx->i)) > 0) {
                const char *end;

                start = lx->i + tag;
                end   = NULL;
                for (size_t j = start; j + tag <= lx->n; j++)
                        if (!memcmp(lx->s + j, lx->s + lx->i, tag)) {
                                end = lx->s + j;
                                break;
                        }
                t->kind     = TOK_STR;
                t->body     = lx->s + start;
                t->body_len = end ? (size_t)(end - t->body) : lx->n - start;
                advance(lx, tag + t->body_len + (end ? tag : 0));
                return;
        }
        if (c == '\'' || ((c == 'E' || c == 'e') && lx->i + 1 < lx->n &&
                          lx->s[lx->i + 1] == '\'')) {
                bool esc = c != '\'';

                advance(lx, esc ? 2 : 1);
                start = lx->i;
                while (lx->i < lx->n) {
                        if (esc && lx->s[lx->i] == '\\') {
                                advance(lx, 2);
                        } else if (lx->s[lx->i] == '\'') {
                                if (lx->i + 1 < lx->n &&
                                    lx->s[lx->i + 1] == '\'')
                                        advance(lx, 2);
                                else
                                        break;
                        } else {
                                advance(lx, 1);
                        }
                }
                t->kind     = TOK_STR;
                t->body     = lx->s + start;
                t->body_len = lx->i - start;
                advance(lx, 1);
                return;
        }
        if (c == '"') {
                size_t k = 0;

                advance(lx, 1);
                while (lx->i < lx->n) {
                        if (lx->s[lx->i] == '"') {
                                if (lx->i + 1 < lx->n &&
                                    lx->s[lx->i + 1] == '"') {
                                        advance(lx, 1);
                                } else {
                                        advance(lx, 1);
                                        break;
                                }
                        }
                        if (k + 1 < sizeof(t->text))
                                t->text[k++] = lx->s[lx->i];
                        advance(lx, 1);
                }
                t->kind   = TOK_WORD;
                t->quoted = true;
                return;
        }
        if (word_char(c) && c != '$') {
                size_t k = 0;

                while (lx->i < lx->n && word_char(lx->s[lx->i])) {
                        if (k + 1 < sizeof(t->text))
                                t->text[k++] =
                                    (char)toupper((unsigned char)lx->s[lx->i]);
                        advance(lx, 1);
                }
                t->kind = TOK_WORD;
                return;
        }
        t->kind    = TOK_SYM;
        t->text[0] = c;
        /* := and :: are one symbol each; nothing else needs two */
        if (c == ':' && lx->i + 1 < lx->n &&
            (lx->s[lx->i + 1] == '=' || lx->s[lx->i + 1] == ':')) {
                t->text[1] = lx->s[lx->i + 1];
                advance(lx, 1);
        }
        advance(lx, 1);
}

/* One statement's tokens. */
struct stmt {
        struct tok *t;
        size_t n, cap;
};

static bool is(const struct stmt *s, size_t i, const char *w)
{
        return i < s->n && s->t[i].kind != TOK_STR && !strcmp(s->t[i].text, w);
}

/* The first index >= from of word w, else s->n. */
static size_t find(const struct stmt *s, size_t from, const char *w)
{
        for (size_t i = from; i < s->n; i++)
                if (is(s, i, w))
                        return i;
        return s->n;
}

/* A relation name at *i (a word, maybe schema.name): copied, *i past it. */
static void name_at(const struct stmt *s, size_t *i, char *out, size_t size)
{
        size_t k;

        out[0] = '\0';
        for (k = 0; *i < s->n && s->t[*i].kind == TOK_WORD; k++) {
                size_t at           = strlen(out);
                const struct tok *t = &s->t[*i];

                snprintf(out + at, size - at, "%s%s", k ? "." : "", t->text);
                /* an unquoted name is folded to lower case, as
                 * PostgreSQL does */
                if (!t->quoted)
                        for (char *p = out + at; *p; p++)
                                *p = (char)tolower((unsigned char)*p);
                (*i)++;
                /* schema.name */
                if (!is(s, *i, ".") || *i + 1 >= s->n ||
                    s->t[*i + 1].kind != TOK_WORD)
                        return;
                (*i)++;
        }
}

static void skip_words(const struct stmt *s, size_t *i, const char *a,
                       const char *b, const char *c)
{
        /* skips "IF EXISTS", "IF NOT EXISTS", "ONLY", "CONCURRENTLY" */
        for (;;) {
                if (a && is(s, *i, a))
                        (*i)++;
                else if (b && is(s, *i, b))
                        (*i)++;
                else if (c && is(s, *i, c))
                        (*i)++;
                else if (is(s, *i, "IF") && is(s, *i + 1, "NOT") &&
                         is(s, *i + 2, "EXISTS"))
                        *i += 3;
                else if (is(s, *i, "IF") && is(s, *i + 1, "EXISTS"))
                        *i += 2;
                else
                        return;
        }
}

/* [CONCURRENTLY] [IF [NOT] EXISTS] at *i, skipped: whether CONCURRENTLY
 * was there; *exists whether IF was. */
static bool concurrently_if(const struct stmt *s, size_t *i, bool *exists)
{
        bool c = is(s, *i, "CONCURRENTLY");

        *i += c;
        *exists = is(s, *i, "IF");
        skip_words(s, i, NULL, NULL, NULL);
        return c;
}

struct out {
        struct migrate_step *v;
        size_t n, max;
        bool in_do;
        struct migrate_step sink; /* the steps past max */
};

static struct migrate_step *add(struct out *o, const struct stmt *s,
                                const char *what, const char *target,
                                enum migrate_lock lock)
{
        struct migrate_step *st = o->n < o->max ? &o->v[o->n] : &o->sink;

        o->n++;
        memset(st, 0, sizeof(*st));
        /* cut to the fields (the precision says so to -O3's
         * -Wformat-truncation) */
        snprintf(st->what, sizeof(st->what), "%.*s", (int)sizeof(st->what) - 1,
                 what);
        snprintf(st->target, sizeof(st->target), "%.*s",
                 (int)sizeof(st->target) - 1, target ? target : "");
        st->lock  = lock;
        st->in_do = o->in_do;
        st->line  = s->n ? s->t[0].line : 0;
        return st;
}

/* Every "REFERENCES t" of s: a foreign key locks t against writes. */
static void references(struct out *o, const struct stmt *s)
{
        char name[64];

        for (size_t i = find(s, 0, "REFERENCES"); i < s->n;
             i        = find(s, i, "REFERENCES")) {
                i++;
                name_at(s, &i, name, sizeof(name));
                add(o, s, "FOREIGN KEY", name,
                    MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE);
        }
}

/* "FROM t" / "USING t" / "JOIN t" of a data statement: t is read. */
static void sources(struct out *o, const struct stmt *s, size_t from)
{
        char name[64];
        /* per open parenthesis: is it a function whose arguments say
         * FROM (extract(epoch FROM t), substring(s FROM 1))? */
        bool fn[32]  = { false };
        size_t depth = 0;

        for (size_t i = from; i < s->n; i++) {
                size_t j = i + 1;

                if (is(s, i, "(")) {
                        if (depth < sizeof(fn) / sizeof(*fn))
                                fn[depth] =
                                    i > 0 && (is(s, i - 1, "EXTRACT") ||
                                              is(s, i - 1, "SUBSTRING") ||
                                              is(s, i - 1, "TRIM") ||
                                              is(s, i - 1, "OVERLAY") ||
                                              is(s, i - 1, "POSITION"));
                        depth++;
                        continue;
                }
                if (is(s, i, ")")) {
                        depth -= depth > 0;
                        continue;
                }
                if (depth > 0 && depth <= sizeof(fn) / sizeof(*fn) &&
                    fn[depth - 1])
                        continue;
                if (!is(s, i, "FROM") && !is(s, i, "USING") &&
                    !is(s, i, "JOIN"))
                        continue;
                /* DELETE FROM t: t is the target, not a source */
                if (i > 0 && is(s, i, "FROM") && is(s, i - 1, "DELETE"))
                        continue;
                skip_words(s, &j, "ONLY", NULL, NULL);
                name_at(s, &j, name, sizeof(name));
                /* FROM (subquery), FROM function(...): nothing named */
                if (!*name || is(s, j, "("))
                        continue;
                add(o, s, "reads", name, MIGRATE_LOCK_ACCESS_SHARE)->reads_all =
                    true;
        }
}

static void plan_text(struct out *o, const char *sql, size_t len,
                      unsigned line0, bool in_do);

static void plan_create(struct out *o, const struct stmt *s)
{
        size_t i     = 1;
        bool replace = false, concurrently = false, exists = false;
        char name[64], table[64];
        struct migrate_step *st;

        if (is(s, i, "OR") && is(s, i + 1, "REPLACE")) {
                replace = true;
                i += 2;
        }
        skip_words(s, &i, "UNIQUE", "TEMP", "TEMPORARY");
        if (is(s, i, "TABLE")) {
                i++;
                skip_words(s, &i, NULL, NULL, NULL);
                name_at(s, &i, name, sizeof(name));
                add(o, s, "CREATE TABLE", name, MIGRATE_LOCK_NONE)->creates =
                    true;
                references(o, s);
                if (find(s, i, "AS") < s->n)
                        sources(o, s, i);
        } else if (is(s, i, "INDEX")) {
                i++;
                concurrently = concurrently_if(s, &i, &exists);
                name[0]      = '\0';
                if (!is(s, i, "ON"))
                        name_at(s, &i, name, sizeof(name));
                i = find(s, i, "ON") + 1;
                skip_words(s, &i, "ONLY", NULL, NULL);
                name_at(s, &i, table, sizeof(table));
                st            = add(o, s,
                         concurrently ? "CREATE INDEX CONCURRENTLY"
                                                 : "CREATE INDEX",
                                    table,
                         concurrently ? MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE
                                                 : MIGRATE_LOCK_SHARE);
                st->reads_all = true;
                st->if_exists = exists;
                snprintf(st->index, sizeof(st->index), "%s", name);
        } else if (is(s, i, "VIEW") ||
                   (is(s, i, "MATERIALIZED") && is(s, i + 1, "VIEW"))) {
                bool mat = is(s, i, "MATERIALIZED");

                i += mat ? 2 : 1;
                skip_words(s, &i, NULL, NULL, NULL);
                name_at(s, &i, name, sizeof(name));
                /* OR REPLACE locks the view; a new one is made */
                st = add(o, s, mat ? "CREATE MATERIALIZED VIEW" : "CREATE VIEW",
                         name,
                         replace ? MIGRATE_LOCK_ACCESS_EXCLUSIVE
                                 : MIGRATE_LOCK_NONE);
                st->creates = !replace;
        } else if (is(s, i, "TRIGGER") ||
                   (is(s, i, "CONSTRAINT") && is(s, i + 1, "TRIGGER"))) {
                i = find(s, i, "ON") + 1;
                name_at(s, &i, table, sizeof(table));
                add(o, s, "CREATE TRIGGER", table,
                    MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE);
        } else if (is(s, i, "FUNCTION") || is(s, i, "PROCEDURE") ||
                   is(s, i, "SEQUENCE") || is(s, i, "TYPE") ||
                   is(s, i, "EXTENSION") || is(s, i, "SCHEMA") ||
                   is(s, i, "AGGREGATE") || is(s, i, "DOMAIN")) {
                char what[32];

                /* OR REPLACE of a function: the one an earlier
                 * migration made, changed in place */
                snprintf(what, sizeof(what), "%s %.20s",
                         replace ? "REPLACE" : "CREATE", s->t[i].text);
                i++;
                skip_words(s, &i, NULL, NULL, NULL);
                name_at(s, &i, name, sizeof(name));
                add(o, s, what, name, MIGRATE_LOCK_NONE)->creates = !replace;
        } else {
                add(o, s, "CREATE", "", MIGRATE_LOCK_NONE)->unknown = true;
        }
}

/* Whether the parameters of SET ( ... ) at sub (its "(" at sub + 1, up
 * to end) are all ones whose change takes SHARE UPDATE EXCLUSIVE: fillfactor,
 * the toast and autovacuum ones and parallel_workers (the ALTER TABLE
 * page of PostgreSQL 15). */
static bool light_storage_params(const struct stmt *s, size_t sub, size_t end)
{
        bool name_next = true, any = false;

        if (!is(s, sub, "SET") || !is(s, sub + 1, "("))
                return false;
        for (size_t k = sub + 2; k < end && !is(s, k, ")"); k++) {
                const char *w = s->t[k].text;

                if (is(s, k, ",")) {
                        name_next = true;
                        continue;
                }
                if (!name_next)
                        continue;
                name_next = false;
                any       = true;
                if (s->t[k].kind == TOK_STR ||
                    (strcmp(w, "FILLFACTOR") != 0 &&
                     strncmp(w, "AUTOVACUUM_", 11) != 0 &&
                     strcmp(w, "TOAST") != 0 && strncmp(w, "TOAST_", 6) != 0 &&
                     strcmp(w, "PARALLEL_WORKERS") != 0))
                        return false;
                /* toast.x: the dot and x are one parameter's name */
                if (is(s, k + 1, "."))
                        k += 2;
        }
        return any;
}

/* ALTER TABLE's subcommands: the lock is ACCESS EXCLUSIVE unless every
 * one takes less; some read every row. */
static void plan_alter_table(struct out *o, const struct stmt *s, size_t i)
{
        char name[64];
        struct migrate_step *st;
        enum migrate_lock lock = MIGRATE_LOCK_NONE;
        bool scan              = false;
        size_t sub             = i;
        int depth              = 0;

        skip_words(s, &i, "ONLY", NULL, NULL);
        name_at(s, &i, name, sizeof(name));
        sub = i;
        /* one subcommand at a time, split at the commas outside ( ) */
        while (sub < s->n) {
                size_t end = sub;
                enum migrate_lock l;
                bool not_valid;

                for (depth = 0; end < s->n; end++) {
                        if (is(s, end, "("))
                                depth++;
                        else if (is(s, end, ")"))
                                depth--;
                        else if (depth == 0 && is(s, end, ","))
                                break;
                }
                not_valid = false;
                for (size_t k = sub; k + 1 < end; k++)
                        if (is(s, k, "NOT") && is(s, k + 1, "VALID"))
                                not_valid = true;
                l = MIGRATE_LOCK_ACCESS_EXCLUSIVE;
                if (is(s, sub, "VALIDATE")) {
                        l    = MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE;
                        scan = true;
                } else if ((is(s, sub, "SET") &&
                            (is(s, sub + 1, "STATISTICS") ||
                             is(s, sub + 1, "WITHOUT"))) ||
                           light_storage_params(s, sub, end)) {
                        l = MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE;
                } else if ((is(s, sub, "ENABLE") || is(s, sub, "DISABLE")) &&
                           is(s, sub + 1, "TRIGGER")) {
                        l = MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE;
                } else if (is(s, sub, "ADD") && find(s, sub, "FOREIGN") < end) {
                        l    = MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE;
                        scan = scan || !not_valid;
                } else if (is(s, sub, "ADD") && !is(s, sub + 1, "COLUMN") &&
                           (find(s, sub, "CHECK") < end ||
                            find(s, sub, "UNIQUE") < end ||
                            find(s, sub, "PRIMARY") < end ||
                            find(s, sub, "EXCLUDE") < end)) {
                        scan = scan || !not_valid;
                } else if (is(s, sub, "ALTER") &&
                           (find(s, sub, "TYPE") < end ||
                            (find(s, sub, "SET") < end &&
                             find(s, sub, "NULL") < end &&
                             find(s, sub, "DROP") >= end))) {
                        /* a new type rewrites; SET NOT NULL scans */
                        scan = true;
                }
                if (l > lock)
                        lock = l;
                sub = end + 1;
        }
        if (lock == MIGRATE_LOCK_NONE)
                lock = MIGRATE_LOCK_ACCESS_EXCLUSIVE;
        st            = add(o, s, "ALTER TABLE", name, lock);
        st->reads_all = scan;
        references(o, s);
}

static void plan_drop(struct out *o, const struct stmt *s)
{
        size_t i = 1;
        char name[64], what[32];
        bool concurrently = false, exists, index;
        enum migrate_lock lock;

        if (is(s, i, "MATERIALIZED"))
                i++;
        if (i >= s->n || s->t[i].kind != TOK_WORD) {
                add(o, s, "DROP", "", MIGRATE_LOCK_NONE)->unknown = true;
                return;
        }
        snprintf(what, sizeof(what), "DROP %.20s", s->t[i].text);
        if (is(s, i, "TRIGGER") || is(s, i, "POLICY") || is(s, i, "RULE")) {
                i = find(s, i, "ON") + 1;
                name_at(s, &i, name, sizeof(name));
                add(o, s, what, name, MIGRATE_LOCK_ACCESS_EXCLUSIVE);
                return;
        }
        if (is(s, i, "FUNCTION") || is(s, i, "PROCEDURE") || is(s, i, "TYPE") ||
            is(s, i, "SEQUENCE") || is(s, i, "SCHEMA") ||
            is(s, i, "EXTENSION") || is(s, i, "DOMAIN") ||
            is(s, i, "AGGREGATE")) {
                i++;
                skip_words(s, &i, NULL, NULL, NULL);
                name_at(s, &i, name, sizeof(name));
                add(o, s, what, name, MIGRATE_LOCK_NONE);
                return;
        }
        if (!is(s, i, "TABLE") && !is(s, i, "VIEW") && !is(s, i, "INDEX")) {
                add(o, s, what, "", MIGRATE_LOCK_NONE)->unknown = true;
                return;
        }
        index = is(s, i, "INDEX");
        i++;
        concurrently = concurrently_if(s, &i, &exists);
        lock         = concurrently ? MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE
                                    : MIGRATE_LOCK_ACCESS_EXCLUSIVE;
        /* DROP TABLE a, b */
        for (;;) {
                struct migrate_step *st;

                name_at(s, &i, name, sizeof(name));
                st            = add(o, s, what, name, lock);
                st->if_exists = exists;
                if (index)
                        snprintf(st->index, sizeof(st->index), "%s", name);
                if (!is(s, i, ","))
                        return;
                i++;
        }
}

/* INSERT INTO t / UPDATE t / DELETE FROM t at i (also inside WITH). */
static size_t plan_dml(struct out *o, const struct stmt *s, size_t i)
{
        char name[64];
        const char *what = s->t[i].text;

        i++;
        if (!strcmp(what, "INSERT") || !strcmp(what, "DELETE"))
                i++; /* INTO, FROM */
        skip_words(s, &i, "ONLY", NULL, NULL);
        name_at(s, &i, name, sizeof(name));
        /* an INSERT writes the rows it selects; an UPDATE or a DELETE may
         * touch every row of its table */
        add(o, s, what, name, MIGRATE_LOCK_ROW_EXCLUSIVE)->reads_all =
            strcmp(what, "INSERT") != 0;
        return i;
}

static void plan_do(struct out *o, const struct stmt *s)
{
        for (size_t i = 1; i < s->n; i++)
                if (s->t[i].kind == TOK_STR) {
                        bool was = o->in_do;

                        add(o, s, "DO", "", MIGRATE_LOCK_NONE);
                        o->in_do = true;
                        /* the body's lines count from the DO's line */
                        plan_text(o, s->t[i].body, s->t[i].body_len,
                                  s->t[i].line, true);
                        o->in_do = was;
                        return;
                }
        add(o, s, "DO", "", MIGRATE_LOCK_NONE)->unknown = true;
}

/* One statement; in_do: a PL/pgSQL statement of a DO block. */
static void plan_stmt(struct out *o, struct stmt *s, bool in_do)
{
        size_t i = 0;
        char name[64];

        if (in_do) {
                /* PL/pgSQL's control words around the SQL */
                for (;;) {
                        size_t then;

                        if (is(s, i, "BEGIN") || is(s, i, "ELSE") ||
                            is(s, i, "LOOP")) {
                                i++;
                        } else if ((is(s, i, "IF") || is(s, i, "ELSIF") ||
                                    is(s, i, "WHEN")) &&
                                   (then = find(s, i, "THEN")) < s->n) {
                                i = then + 1;
                        } else {
                                break;
                        }
                }
                if (i >= s->n || is(s, i, "END") || is(s, i, "RAISE") ||
                    is(s, i, "RETURN") || is(s, i, "NULL") ||
                    is(s, i, "DECLARE") || is(s, i, "EXIT") ||
                    is(s, i, "CONTINUE") || is(s, i, "ASSERT") ||
                    is(s, i, "GET") || (i + 1 < s->n && is(s, i + 1, ":=")) ||
                    (i + 1 < s->n && s->t[i + 1].kind == TOK_WORD &&
                     s->t[i].kind == TOK_WORD && is(s, i + 2, ":=")))
                        return;
                if (is(s, i, "EXECUTE")) {
                        add(o, s, "EXECUTE", "", MIGRATE_LOCK_NONE)->unknown =
                            true;
                        return;
                }
                if (is(s, i, "PERFORM")) {
                        sources(o, s, i);
                        return;
                }
                /* the statement proper from here */
                s->t += i;
                s->n -= i;
        }
        if (s->n == 0)
                return;
        if (is(s, 0, "CREATE")) {
                plan_create(o, s);
        } else if (is(s, 0, "ALTER") && is(s, 1, "TABLE")) {
                i = 2;
                skip_words(s, &i, NULL, NULL, NULL);
                plan_alter_table(o, s, i);
        } else if (is(s, 0, "ALTER") &&
                   (is(s, 1, "VIEW") || is(s, 1, "INDEX") ||
                    is(s, 1, "SEQUENCE") || is(s, 1, "FUNCTION") ||
                    is(s, 1, "TYPE") || is(s, 1, "MATERIALIZED"))) {
                char what[32];
                bool fn = is(s, 1, "FUNCTION") || is(s, 1, "TYPE");

                snprintf(what, sizeof(what), "ALTER %.20s", s->t[1].text);
                i = is(s, 1, "MATERIALIZED") ? 3 : 2;
                skip_words(s, &i, NULL, NULL, NULL);
                name_at(s, &i, name, sizeof(name));
                add(o, s, what, name,
                    fn ? MIGRATE_LOCK_NONE : MIGRATE_LOCK_ACCESS_EXCLUSIVE);
        } else if (is(s, 0, "DROP")) {
                plan_drop(o, s);
        } else if (is(s, 0, "INSERT") || is(s, 0, "UPDATE") ||
                   is(s, 0, "DELETE")) {
                plan_dml(o, s, 0);
                sources(o, s, 1);
        } else if (is(s, 0, "WITH")) {
                /* each data-modifying part, then what is read */
                for (i = 1; i < s->n; i++)
                        if ((is(s, i, "INSERT") && is(s, i + 1, "INTO")) ||
                            (is(s, i, "DELETE") && is(s, i + 1, "FROM")) ||
                            (is(s, i, "UPDATE") && !is(s, i - 1, "FOR") &&
                             !is(s, i - 1, "DO") && !is(s, i - 1, "KEY") &&
                             !is(s, i - 1, "ON")))
                                plan_dml(o, s, i);
                sources(o, s, 1);
        } else if (is(s, 0, "SELECT") || is(s, 0, "VALUES") ||
                   is(s, 0, "TABLE")) {
                size_t before = o->n;

                sources(o, s, 1);
                if (o->n == before)
                        add(o, s, "SELECT", "", MIGRATE_LOCK_NONE);
        } else if (is(s, 0, "LOCK")) {
                enum migrate_lock l = MIGRATE_LOCK_ACCESS_EXCLUSIVE;
                size_t in;

                i = 1;
                skip_words(s, &i, "TABLE", "ONLY", NULL);
                name_at(s, &i, name, sizeof(name));
                if ((in = find(s, i, "IN")) < s->n) {
                        static const struct {
                                const char *a, *b;
                                enum migrate_lock l;
                        } modes[] = {
                                { "ACCESS", "SHARE",
                                  MIGRATE_LOCK_ACCESS_SHARE },
                                { "ROW", "SHARE", MIGRATE_LOCK_ROW_SHARE },
                                { "ROW", "EXCLUSIVE",
                                  MIGRATE_LOCK_ROW_EXCLUSIVE },
                                { "SHARE", "UPDATE",
                                  MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE },
                                { "SHARE", "ROW",
                                  MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE },
                                { "SHARE", "MODE", MIGRATE_LOCK_SHARE },
                                { "EXCLUSIVE", "MODE", MIGRATE_LOCK_EXCLUSIVE },
                                { "ACCESS", "EXCLUSIVE",
                                  MIGRATE_LOCK_ACCESS_EXCLUSIVE },
                        };

                        for (size_t m = 0; m < sizeof(modes) / sizeof(*modes);
                             m++)
                                if (is(s, in + 1, modes[m].a) &&
                                    is(s, in + 2, modes[m].b))
                                        l = modes[m].l;
                }
                add(o, s, "LOCK", name, l);
        } else if (is(s, 0, "ANALYZE")) {
                i = 1;
                name_at(s, &i, name, sizeof(name));
                add(o, s, "ANALYZE", name, MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE);
        } else if (is(s, 0, "TRUNCATE")) {
                i = 1;
                skip_words(s, &i, "TABLE", "ONLY", NULL);
                name_at(s, &i, name, sizeof(name));
                add(o, s, "TRUNCATE", name, MIGRATE_LOCK_ACCESS_EXCLUSIVE);
        } else if (is(s, 0, "COMMENT") || is(s, 0, "SET") ||
                   is(s, 0, "RESET") || is(s, 0, "GRANT") ||
                   is(s, 0, "REVOKE")) {
                /* a catalog row or a setting: nothing a daemon waits on
                 * for long (COMMENT ON TABLE takes SHARE UPDATE EXCLUSIVE,
                 * which blocks no read or write) */
                add(o, s, s->t[0].text, "", MIGRATE_LOCK_NONE);
        } else if (is(s, 0, "DO")) {
                plan_do(o, s);
        } else {
                add(o, s, s->t[0].kind == TOK_WORD ? s->t[0].text : "?", "",
                    MIGRATE_LOCK_NONE)
                    ->unknown = true;
        }
}

static void push(struct stmt *s, const struct tok *t)
{
        if (s->n == s->cap) {
                size_t cap    = s->cap ? 2 * s->cap : 64;
                struct tok *v = realloc(s->t, cap * sizeof(*v));

                if (!v)
                        abort();
                s->t   = v;
                s->cap = cap;
        }
        s->t[s->n++] = *t;
}

static void plan_text(struct out *o, const char *sql, size_t len,
                      unsigned line0, bool in_do)
{
        struct lex lx = { .s = sql, .n = len, .i = 0, .line = line0 };
        struct stmt s = { 0 };
        struct tok t;
        bool decl = false;

        for (;;) {
                next(&lx, &t);
                if (t.kind != TOK_END &&
                    !(t.kind == TOK_SYM && t.text[0] == ';')) {
                        push(&s, &t);
                        continue;
                }
                if (s.n > 0) {
                        struct stmt view = s;

                        /* a DO block's DECLARE section: its lines up to
                         * the BEGIN are declarations */
                        if (in_do && is(&view, 0, "DECLARE"))
                                decl = true;
                        if (in_do && decl) {
                                size_t b = find(&view, 0, "BEGIN");

                                if (b < view.n) {
                                        decl = false;
                                        view.t += b;
                                        view.n -= b;
                                        plan_stmt(o, &view, in_do);
                                }
                        } else {
                                plan_stmt(o, &view, in_do);
                        }
                }
                s.n = 0;
                if (t.kind == TOK_END)
                        break;
        }
        free(s.t);
}

size_t migrate_split(const char *sql, size_t len, unsigned line0,
                     struct migrate_span *out, size_t max)
{
        struct lex lx = { .s = sql, .n = len, .i = 0, .line = line0 };
        struct tok t;
        size_t n = 0, start = 0, end = 0;
        unsigned line = 0;
        bool open     = false;

        for (;;) {
                size_t before;

                skip_blank(&lx);
                before = lx.i;
                next(&lx, &t);
                if (t.kind != TOK_END &&
                    !(t.kind == TOK_SYM && t.text[0] == ';')) {
                        if (!open) {
                                open  = true;
                                start = before;
                                line  = t.line;
                        }
                        end = lx.i;
                        continue;
                }
                if (open) {
                        if (n < max) {
                                out[n].off  = start;
                                out[n].len  = end - start;
                                out[n].line = line;
                        }
                        n++;
                        open = false;
                }
                if (t.kind == TOK_END)
                        return n;
        }
}

bool migrate_step_no_transaction_ok(const struct migrate_step *s)
{
        if (s->unknown)
                return false;
        if (!strcmp(s->what, "CREATE INDEX CONCURRENTLY"))
                return s->if_exists && *s->index;
        if (!strcmp(s->what, "DROP INDEX"))
                return s->if_exists &&
                       s->lock == MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE;
        if (!strcmp(s->what, "ALTER TABLE"))
                return s->lock == MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE;
        return !strcmp(s->what, "ANALYZE") || !strcmp(s->what, "COMMENT");
}

size_t migrate_plan(const char *sql, size_t len, unsigned line0,
                    struct migrate_step *out, size_t max)
{
        struct out o = { .v = out, .n = 0, .max = max, .in_do = false };


        plan_text(&o, sql, len, line0, false);
        return o.n;
}

struct migrate_step *migrate_plan_all(const char *sql, size_t len,
                                      unsigned line0, size_t *n)
{
        struct migrate_step *s;

        *n = migrate_plan(sql, len, line0, NULL, 0);
        s  = xcalloc(*n ? *n : 1, sizeof(*s));
        migrate_plan(sql, len, line0, s, *n);
        return s;
}

const char *migrate_lock_name(enum migrate_lock l)
{
        static const char *const names[] = {
                [MIGRATE_LOCK_NONE]          = "-",
                [MIGRATE_LOCK_ACCESS_SHARE]  = "AccessShareLock",
                [MIGRATE_LOCK_ROW_SHARE]     = "RowShareLock",
                [MIGRATE_LOCK_ROW_EXCLUSIVE] = "RowExclusiveLock",
                [MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE] =
                    "ShareUpdateExclusiveLock",
                [MIGRATE_LOCK_SHARE]               = "ShareLock",
                [MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE] = "ShareRowExclusiveLock",
                [MIGRATE_LOCK_EXCLUSIVE]           = "ExclusiveLock",
                [MIGRATE_LOCK_ACCESS_EXCLUSIVE]    = "AccessExclusiveLock",
        };

        return (unsigned)l < sizeof(names) / sizeof(*names) ? names[l] : "?";
}

const char *migrate_lock_blocks(enum migrate_lock l)
{
        switch (l) {
        case MIGRATE_LOCK_ACCESS_EXCLUSIVE:
                return "reads and writes";
        case MIGRATE_LOCK_EXCLUSIVE:
                return "writes and FOR UPDATE";
        case MIGRATE_LOCK_SHARE:
        case MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE:
                return "writes";
        default:
                return NULL;
        }
}
