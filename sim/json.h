/* json.h — JSON read and written the one way every trainsim reader and
 * writer does.
 *
 * cJSON alone accepts what a careful reader must refuse: a key given twice
 * (cJSON_GetObjectItem returns the first, so {"x": 1, "x": 2} reads as 1),
 * text after the value ({"x": 1} garbage), numbers beyond double range (read
 * as infinity), a NUL byte inside a file (the rest is silently ignored), and
 * a failed allocation reads as "malformed".  sim_json_parse() refuses each
 * with the source, the line and column or the JSON path, and what was
 * expected, so every reader adopts all of it with one call.
 *
 * Writers that stream (the Chrome trace, the memory CSV) escape names with
 * sim_json_fputs() / sim_csv_fputs(); whole documents are built with cJSON. */
#ifndef SIM_JSON_H
#define SIM_JSON_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "error.h"

/* Routes cJSON's allocations through the checked allocator (alloc.h) for
 * documents built for output; called once at start (parsing calls it too). */
void sim_json_init(void);

/* Parses text (NUL-terminated) as exactly one JSON value.  source names it
 * in messages ("cluster.json"). */
cJSON *sim_json_parse(const char *text, const char *source, sim_err *err);

/* Parses the len bytes at whole + off, a value inside the larger document
 * whole (for line numbers), whose JSON path is path ("" at the top, e.g.
 * "ranks[0].streams[1].ops[7]"), with the same checks. */
cJSON *sim_json_parse_slice(const char *whole, size_t off, size_t len, const char *source, const char *path,
                            sim_err *err);

/* 1-based line and column of position at in text. */
void sim_json_line_col(const char *text, const char *at, int *line, int *col);

/* Writes the document doc to out, indented, with a final newline, and frees
 * it: the one way the front ends print a JSON result. */
void sim_json_print(FILE *out, cJSON *doc);

/* Writes s as a JSON string literal, quotes included. */
void sim_json_fputs(FILE *f, const char *s);
/* s as a quoted, escaped JSON string, malloc'd (never NULL: alloc.h). */
char *sim_json_quote(const char *s);
/* Writes s as one CSV field (RFC 4180: quoted when it holds a comma, a
 * quote, CR or LF; quotes doubled). */
void sim_csv_fputs(FILE *f, const char *s);

#endif
